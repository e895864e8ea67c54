"""`python -m vigia.common.slo`, the same as `vigia-slo`."""

import sys

from vigia.common.slo.cli import main

sys.exit(main())
