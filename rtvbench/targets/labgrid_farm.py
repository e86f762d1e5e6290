"""A run's labgrid places taken all together before anything is measured (docs/targets/labgrid.md).

Each place gets a reservation at its coordinator (labgrid's own queue: a place that comes free goes
to the oldest waiting reservation, and one allocated to this run cannot be acquired by anyone else
meanwhile). Only when every reservation is allocated are the places acquired, so a run never holds
some boards and then finds another busy midway. The reservations are cancelled once the places are
acquired, or when the run gives up: a reservation nobody polls expires at the coordinator within a
minute, so even a SIGKILLed run leaves none behind for long.
"""

from __future__ import annotations

import logging
import time
from typing import Iterable

from rtvbench.errors import TargetError

RESERVE_TIMEOUT_S = 300.0       # how long a run waits for a busy place unless --reserve-timeout says
POLL_S = 1.0                    # between polls, which also keep the reservations from expiring

_log = logging.getLogger(__name__)


def reserve_farm(targets: Iterable, timeout_s: float = RESERVE_TIMEOUT_S) -> None:
    """Acquire the place of every labgrid target among `targets` that has none yet, all of them or,
    after waiting `timeout_s` for a busy one, none (TargetError naming that place and its holder)."""
    farm = sorted((t for t in targets if getattr(t, "kind", None) == "labgrid" and not t.holds_place()),
                  key=lambda t: (t.coordinator, t.params.place))
    if not farm:
        return
    for target in farm:
        target.open_session()
        target.refuse_mine()
    tokens: dict[str, object] = {}
    taken = []
    try:
        for target in farm:
            tokens[_reserve(target)] = target
        _wait_for_all(tokens, timeout_s)
        for target in farm:
            target.take_place()
            taken.append(target)
    except BaseException:
        for target in taken:
            target.close()
        raise
    finally:
        for token, target in tokens.items():
            _cancel(target, token)


def _call(target, method: str, request):
    """One request to the target's coordinator; TargetError with the coordinator's reason."""
    import grpc
    session = target.open_session()
    try:
        return session.loop.run_until_complete(getattr(session.stub, method)(request))
    except grpc.aio.AioRpcError as e:
        raise TargetError(f"the labgrid coordinator at {target.coordinator} refused to {method} for place "
                          f"{target.params.place} ({e.details()}); check it with `labgrid-client -x "
                          f"{target.coordinator} reservations`.") from None


def _reserve(target) -> str:
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb
    # The coordinator matches a place's name as if it were one of its tags.
    only_this = {"main": pb.Reservation.Filter(filter={"name": target.params.place})}
    return _call(target, "CreateReservation", pb.CreateReservationRequest(filters=only_this)).reservation.token


def _cancel(target, token: str) -> None:
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb
    try:
        _call(target, "CancelReservation", pb.CancelReservationRequest(token=token))
    except TargetError as e:
        # Said, not raised: the coordinator drops it within a minute anyway, as nobody polls it.
        _log.warning(str(e))


def _waiting(tokens: dict) -> list:
    """The targets whose reservation is not allocated yet (the poll keeps each one alive)."""
    from labgrid.remote.common import Reservation, ReservationState
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb
    waiting = []
    for token, target in tokens.items():
        res = Reservation.from_pb2(_call(target, "PollReservation", pb.PollReservationRequest(token=token)).reservation)
        if res.state is ReservationState.waiting:
            waiting.append(target)
        elif res.state is not ReservationState.allocated:
            raise TargetError(f"the reservation of labgrid place {target.params.place} at {target.coordinator} "
                              f"became {res.state.name} while this run waited for its other places; run again.")
    return waiting


def _holder(target) -> str:
    """Who keeps the place from this run, as "acquired by host/user" or "reserved for host/user"."""
    from labgrid.remote.common import Reservation
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb
    session = target.open_session()
    session.loop.run_until_complete(session.sync_with_coordinator())
    place = session.places[target.params.place]
    if place.acquired:
        return f"acquired by {place.acquired}"
    for res in _call(target, "GetReservations", pb.GetReservationsRequest()).reservations:
        if res.token == place.reservation:
            owner = Reservation.from_pb2(res).owner
            if owner == target.me():
                # Not this run's: another run of yours, or a killed one's that nobody polls any more.
                return (f"reserved for you ({owner}) by another rtvbench run, or by a killed one whose "
                        "reservation the coordinator drops a minute after it was last polled")
            return f"reserved for {owner}"
    return "reserved for someone who asked before this run"


def _wait_for_all(tokens: dict, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    said = False
    while waiting := _waiting(tokens):
        first = waiting[0]
        place = first.params.place
        if time.monotonic() >= deadline:
            raise TargetError(f"labgrid place {place} is {_holder(first)} and was not free within "
                              f"--reserve-timeout ({timeout_s:g} s), so nothing was acquired or measured: wait "
                              f"until they release it (`labgrid-client -p {place} who` shows who holds it), "
                              f"give the run a longer --reserve-timeout, or measure another place in "
                              f"environment {first.name}.")
        if not said:
            others = len(tokens) - len(waiting)
            kept = f"; the {others} other place(s) of the run are reserved meanwhile" if others else ""
            _log.warning(f"labgrid place {place} is {_holder(first)}: waiting up to "
                         f"{timeout_s:g} s (--reserve-timeout) for it before measuring{kept}.")
            said = True
        time.sleep(POLL_S)
