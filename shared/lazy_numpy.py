"""numpy, imported on first use rather than with the engine.

Only the columnar fast path (``process_columns``) needs numpy, and importing it is a
third of ``cerfleet run``'s start-up on a small file, where events go one by one.
Engine modules write ``np.…`` as before; type checkers see the real module::

    if TYPE_CHECKING:
        import numpy as np
    else:
        from cerfleet.lazy_numpy import np
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["np"]


class _LazyModule(ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        # Only called for attributes the proxy itself lacks, i.e. numpy's.
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self.__name__)
            # Numpy's names become the proxy's own, so later look-ups skip this call
            # (a columnar batch makes dozens: 2% of a 60-row batch's processing).
            for name, value in vars(module).items():
                if not name.startswith("__"):
                    setattr(self, name, value)
        return getattr(module, attr)


np = _LazyModule("numpy")
