"""The visibility API (``visibility.kueue.x-k8s.io/v1beta2``, and ``v1beta1`` with the same
data, as Kueue serves both) as an aggregated API server.

Kueue answers "which workloads are pending, and where are they in line?" on demand from the
in-memory queues instead of writing it into LocalQueue status. pykueue does the same: an
aiohttp application built by :func:`make_app` from a :class:`PendingWorkloadsProvider`
(the queue manager), an authenticator (the aggregator's front-proxy identity) and an
authorizer (SubjectAccessReview against kube-apiserver). Nothing listens at import time.
Serving it with certificates (``assembly``) is imported from its module, not from here: it
loads the cryptography library, which a manager that serves no TLS does without.
"""

from pykueue.manager.runtime.visibility.auth import (
    Authorizer,
    RequestAttributes,
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    UserInfo,
)
from pykueue.manager.runtime.visibility.provider import (
    OwnerReference,
    PendingWorkloadInfo,
    PendingWorkloadsProvider,
)
from pykueue.manager.runtime.visibility.server import make_app

__all__ = [
    "Authorizer",
    "OwnerReference",
    "PendingWorkloadInfo",
    "PendingWorkloadsProvider",
    "RequestAttributes",
    "RequestHeaderAuthenticator",
    "RequestHeaderConfig",
    "UserInfo",
    "make_app",
]
