"""Allow ``python -m pykueue``."""

from pykueue.cli import main

raise SystemExit(main())
