"""outrider_directed — the application-directed client without installing
the package: this file loads python/outrider/directed.py standalone (no
compiled module needed; $OUTRIDER_LIB names liboutrider_directed.so). With the
package installed, `import outrider.directed` is the same module.
"""

import importlib.util as _util
import os as _os
import sys as _sys

_path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "outrider", "directed.py")
_spec = _util.spec_from_file_location("_outrider_directed_impl", _path)
_impl = _util.module_from_spec(_spec)
_sys.modules[_spec.name] = _impl
_spec.loader.exec_module(_impl)

__all__ = _impl.__all__
__doc__ = _impl.__doc__
globals().update({name: getattr(_impl, name) for name in _impl.__all__})
