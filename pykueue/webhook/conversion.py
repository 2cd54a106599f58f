"""A ConversionReview in, its answer out, as bytes: pure, so that a large list can be
converted in a worker process (``webhook.offload``) while the event loop serves everything else.

Bytes at both ends keep the hand-over cheap (a copy, no object graph to pickle) and let the
worker do the parsing and the encoding too, which for a list of thousands of objects cost as
much as the conversion itself.
"""

from __future__ import annotations

import orjson

from pykueue.api.conversion import ConversionError, convert
from pykueue.api.wire import JSON
from pykueue.webhook.review import conversion_response, parse_conversion_review, short

ERROR_LIMIT = 1000


def converted(body: bytes) -> JSON:
    """The ConversionReview's answer (raises ``BadRequest`` for a malformed review)."""
    review = parse_conversion_review(body)
    try:
        # The objects were parsed for this request alone: no copy needed.
        objects = [convert(obj, review.desired_api_version, in_place=True) for obj in review.objects]
    except ConversionError as exc:
        return conversion_response(review.uid, error=short(exc, ERROR_LIMIT))
    return conversion_response(review.uid, objects)


def answer(body: bytes) -> bytes:
    """``converted(body)``, encoded."""
    return orjson.dumps(converted(body))
