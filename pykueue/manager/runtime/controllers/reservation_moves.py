"""A reservation that moves between two status writes.

The core may release a workload (its job stopped after an eviction) and reserve quota for it
again, elsewhere, before the release is written. Written as one change, QuotaReserved would
stay True while the admission changes, which Kueue's API refuses; Kueue itself never does
that, since it requeues only after writing the release. So the writer writes the release
first, then the new reservation.
"""

from __future__ import annotations

from pykueue.api import keys
from pykueue.api.reservation import admission_changed
from pykueue.api.wire import JSON

_RESERVATION = (keys.WorkloadCondition.QUOTA_RESERVED, keys.WorkloadCondition.ADMITTED)


def reserved(status: JSON) -> bool:
    return any(c.get("type") == keys.WorkloadCondition.QUOTA_RESERVED and c.get("status") == "True"
               for c in status.get("conditions") or ())


def reservation_moved(old: JSON, new: JSON) -> bool:
    """Both hold a reservation, with admissions that differ beyond their topology."""
    return reserved(old) and reserved(new) and \
        admission_changed(old.get("admission") or {}, new.get("admission") or {})


def released(old: JSON, new: JSON, now: str) -> JSON:
    """``new`` as the release that comes before it: no admission, QuotaReserved and Admitted
    False, everything else (the eviction's conditions) as ``new`` says."""
    out = {k: v for k, v in new.items() if k != "admission"}
    conditions = [c for c in new.get("conditions") or () if c.get("type") not in _RESERVATION]
    conditions.append({"type": keys.WorkloadCondition.QUOTA_RESERVED, "status": "False",
                       "reason": "Pending", "message": "The workload was released",
                       "lastTransitionTime": now})
    if any(c.get("type") == keys.WorkloadCondition.ADMITTED for c in old.get("conditions") or ()):
        conditions.append({"type": keys.WorkloadCondition.ADMITTED, "status": "False",
                           "reason": "NoReservation", "message": "The workload has no reservation",
                           "lastTransitionTime": now})
    out["conditions"] = conditions
    out.pop("unhealthyNodes", None)
    return out
