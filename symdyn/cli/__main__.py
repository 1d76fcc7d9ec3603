"""``python -m symdyn.cli ...``: the ``symdyn`` command."""
import sys

from . import main

sys.exit(main())
