"""The report's table of thermal, frequency and throttling state: every flagged measurement with its
figures, one line per environment for the others, and once per environment whose target has no such
data, that it has none; a warning per flagged measurement; each measurement's state in the JSON."""

from __future__ import annotations

from typing import Any

from rtvbench.analysis.evaluation import Evaluation
from rtvbench.report.run_section import RUN_SECTIONS, RunSection
from rtvbench.report.tables import Row, Sentence, Table
from rtvbench.results import Measurement
from rtvbench.run_analyses.thermal.analysis import FREQ_CHANGE_PERCENT, THERMAL, ThermalPart, ThermalState

NO_DATA = "no thermal/frequency data on this target"


def _freq(st: ThermalState) -> str:
    if st.freq_min_khz is None:
        return "–"
    return f"{st.freq_min_khz / 1000:.0f} – {st.freq_max_khz / 1000:.0f} MHz"


def _temp(st: ThermalState) -> str:
    return f"{st.temp_max_mC / 1000:.1f} °C" if st.temp_max_mC is not None else "–"


def _states(ev: Evaluation, part: ThermalPart):
    """(measurement, state) of every measurement a sampler ran beside."""
    for m in ev.data.run.measurements:
        st = part.by_measurement.get(m.id)
        if st is not None:
            yield m, st


def thermal_tables(ev: Evaluation, part: ThermalPart) -> list[Table]:
    by_env: dict[str, list] = {}
    for m, st in _states(ev, part):
        by_env.setdefault(m.environment, []).append((m, st))
    if not by_env:
        return []           # no sampler ran (a run recorded before sampling existed)
    rows = []
    for env in [e for e in ev.data.environments if e in by_env]:
        pairs = [(m, st) for m, st in by_env[env] if st.has_data]
        if not pairs:
            rows.append(Row([f"`{env}`", NO_DATA]))
            continue
        for m, st in pairs:
            if st.flagged:
                rows.append(Row([f"`{env}`", f"`{m.benchmark}` under `{m.load}`, repetition {m.repetition + 1}",
                                 str(st.samples), _freq(st), _temp(st), "FLAGGED: " + "; ".join(st.flags)],
                                "failed"))
        calm = [st for _, st in pairs if not st.flagged]
        if calm:
            agg = part.calm[env]
            which = "the other" if len(calm) < len(pairs) else "all" if len(calm) > 1 else "the"
            rows.append(Row([f"`{env}`", f"{which} {len(calm)} measurement{'s' if len(calm) != 1 else ''}",
                             str(agg.samples), _freq(agg), _temp(agg), "not flagged"]))
    return [Table("Thermal, frequency and throttling state during the measurements",
                  ["Environment", "Measurement", "Samples", "CPU frequency", "Max temperature", "State"], rows,
                  numeric_from=2, numeric_to=5,
                  note="Sampled on the target before, every 0.5 s during and after each measurement "
                       "(`rtvb-probe sample`). A measurement is flagged when a throttle counter rose (it ran "
                       f"throttled), a CPU's frequency varied by more than {FREQ_CHANGE_PERCENT:g} %, a "
                       "thermal zone reached a passive, hot or critical trip point, or a cooling device other "
                       "than a fan went to a higher state.")]


def thermal_warnings(ev: Evaluation, part: ThermalPart) -> list[Sentence]:
    out = []
    for m, st in _states(ev, part):
        if st.flagged:
            out.append(Sentence("warning", f"Measurement `{m.benchmark}` in `{m.environment}` under `{m.load}`, "
                                           f"repetition {m.repetition + 1}, ran throttled or at a changing "
                                           f"frequency: {'; '.join(st.flags)}."))
    return out


def measurement_json(ev: Evaluation, part: ThermalPart | None, m: Measurement) -> dict[str, Any]:
    # frequency range, highest temperature, why flagged; None: no sampler ran beside it
    st = part.by_measurement.get(m.id) if part is not None else None
    return {"thermal": None if st is None else st.to_dict()}


RUN_SECTIONS.register("thermal")(RunSection(THERMAL, tables=thermal_tables, warnings=thermal_warnings,
                                            measurement_json=measurement_json))
