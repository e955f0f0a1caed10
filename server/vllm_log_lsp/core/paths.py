"""Where a path really leads, once every symlink is resolved."""

from __future__ import annotations

import os
from collections.abc import Sequence


def resolves_inside(path: str, roots: Sequence[str]) -> bool:
    """Whether `path`, with every symlink resolved, lies in one of `roots` (also resolved)."""
    real = os.path.realpath(path)
    for root in roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep):
            return True
    return False
