"""Thermal, frequency and throttling state of a measurement, from the samples `rtvb-probe sample`
took beside it (before, every 0.5 s during, after; stored with the measurement as its
`thermal` cpu_samples row, docs/architecture.md).

A measurement is flagged when, between its first and last sample:
- a throttle counter rose (x86: cpu*/thermal_throttle/*_throttle_count): it ran throttled;
- a CPU's frequency varied by more than FREQ_CHANGE_PERCENT of its highest value;
- a thermal zone reached its lowest passive, hot or critical trip point (active trip points
  start fans, not throttling);
- a cooling device other than a fan went to a higher state (a cpufreq or power-clamp cooling
  device capping the CPUs).
A target with none of these files has no data and no flag, never an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rtvbench.analysis.dataset import RunData
from rtvbench.analysis.run_analysis import RUN_ANALYSES, RunAnalysis
from rtvbench.records import ThermalSample
from rtvbench.results import Measurement

FREQ_CHANGE_PERCENT = 5.0
THROTTLING_TRIPS = ("passive", "hot", "critical")


@dataclass
class ThermalState:
    samples: int
    has_data: bool                          # any temperature, frequency, counter or cooling state
    freq_min_khz: int | None = None         # over every CPU and sample
    freq_max_khz: int | None = None
    temp_max_mC: int | None = None          # over every zone and sample
    flags: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "has_data": self.has_data, "freq_min_khz": self.freq_min_khz,
                "freq_max_khz": self.freq_max_khz, "temp_max_mC": self.temp_max_mC, "flags": self.flags}


def combined(states: list[ThermalState]) -> ThermalState:
    """Several unflagged measurements as one: their samples, the frequency range over all, the hottest."""
    lo = [s.freq_min_khz for s in states if s.freq_min_khz is not None]
    hi = [s.freq_max_khz for s in states if s.freq_max_khz is not None]
    temps = [s.temp_max_mC for s in states if s.temp_max_mC is not None]
    return ThermalState(sum(s.samples for s in states), True, min(lo) if lo else None, max(hi) if hi else None,
                        max(temps) if temps else None)


def _series(samples: list[ThermalSample], key: str) -> dict[str, list[int]]:
    """name -> its values in sample order, for one of the samples' counters (temp_mC, freq_khz ...)."""
    out: dict[str, list[int]] = {}
    for s in samples:
        for name, v in getattr(s, key).items():
            out.setdefault(name, []).append(v)
    return out


def _celsius(mC: int) -> str:
    return f"{mC / 1000:.1f} °C"


def thermal_state(samples: list[ThermalSample], freq_change_percent: float = FREQ_CHANGE_PERCENT) -> ThermalState:
    """The state over one measurement's samples (in order, the first one carrying the zones'
    types and trip points and the cooling devices' types)."""
    first = next((s for s in samples if s.seq == 0), samples[0] if samples else None)
    temps, freqs = _series(samples, "temp_mC"), _series(samples, "freq_khz")
    throttle, cooling = _series(samples, "throttle"), _series(samples, "cooling")
    st = ThermalState(len(samples), bool(temps or freqs or throttle or cooling))
    all_freqs = [v for vs in freqs.values() for v in vs]
    all_temps = [v for vs in temps.values() for v in vs]
    st.freq_min_khz, st.freq_max_khz = (min(all_freqs), max(all_freqs)) if all_freqs else (None, None)
    st.temp_max_mC = max(all_temps) if all_temps else None

    for name, vs in sorted(throttle.items()):
        if vs[-1] > vs[0]:
            st.flags.append(f"throttled: {name} rose by {vs[-1] - vs[0]}")
    for cpu, vs in sorted(freqs.items(), key=lambda kv: (len(kv[0]), kv[0])):
        lo, hi = min(vs), max(vs)
        if hi > 0 and (hi - lo) * 100.0 / hi > freq_change_percent:
            st.flags.append(f"frequency of {cpu} changed by {(hi - lo) * 100.0 / hi:.0f} % "
                            f"({lo / 1000:.0f} to {hi / 1000:.0f} MHz)")
    zone_types = first.zone_types if first else {}
    for zone, vs in sorted(temps.items()):
        trips = [t for t in (first.zone_trips.get(zone, ()) if first else ())
                 if t.type in THROTTLING_TRIPS and t.temp_mC > 0]
        if trips:
            trip = min(trips, key=lambda t: t.temp_mC)
            if max(vs) >= trip.temp_mC:
                st.flags.append(f"{zone} ({zone_types.get(zone) or '?'}) reached {_celsius(max(vs))}, at or above "
                                f"its {trip.type} trip point {_celsius(trip.temp_mC)}")
    cooling_types = first.cooling_types if first else {}
    for dev, vs in sorted(cooling.items()):
        kind = cooling_types.get(dev, "")
        if "fan" not in kind.lower() and max(vs) > vs[0]:
            st.flags.append(f"cooling device {dev} ({kind or '?'}) went from state {vs[0]} to {max(vs)}")
    return st


def measurement_thermal(m: Measurement) -> ThermalState | None:
    """The measurement's state, or None when no sampler ran beside it (an older run, a failure)."""
    return thermal_state(m.thermal_samples) if m.thermal_samples else None


@dataclass(frozen=True)
class ThermalPart:
    """The run's thermal state: each sampled measurement's, and per environment, its unflagged
    measurements' states combined into one."""
    by_measurement: dict[int, ThermalState]     # measurement id -> state; absent: no sampler ran beside it
    calm: dict[str, ThermalState]


def thermal_part(data: RunData, around: object = None) -> ThermalPart:
    states = {m.id: st for m in data.run.measurements if (st := measurement_thermal(m)) is not None}
    calm: dict[str, list[ThermalState]] = {}
    for m in data.run.measurements:
        st = states.get(m.id)
        if st is not None and st.has_data and not st.flagged:
            calm.setdefault(m.environment, []).append(st)
    return ThermalPart(states, {env: combined(sts) for env, sts in calm.items()})


THERMAL: RunAnalysis[ThermalPart] = RUN_ANALYSES.register("thermal")(RunAnalysis("thermal", thermal_part))
