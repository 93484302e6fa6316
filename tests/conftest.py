"""Tests sit beside the layer they test (tests/<layer>/); `helpers` is shared by all of them."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
