"""``python -m shared.cli``: the same as the ``cerfleet`` console script."""

from shared.cli.main import main

raise SystemExit(main())
