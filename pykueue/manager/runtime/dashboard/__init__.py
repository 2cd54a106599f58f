"""The live web dashboard of queues and workloads that ``pykueue run`` serves on every replica.

``view`` turns the queueing core into the pages' JSON (pure); ``changes`` tells browsers
when to refetch; ``server`` is the aiohttp application (I/O only), behind token
authentication and SubjectAccessReview authorization (``access``); ``static/`` holds the
page itself, plain HTML, CSS and JavaScript shipped in the package.
"""
