"""docs/python.md's API reference covers every module of the package that has public functions
(ragform.bias too, which `import ragform` does not import)."""
import sys
from pathlib import Path

import ragform  # noqa: F401  (the installed package, before python/ joins sys.path)

ROOT = Path(__file__).resolve().parents[2]


def test_every_function_module_is_documented():
    sys.path.insert(0, str(ROOT / "python"))
    try:
        import gen_api_docs
    finally:
        sys.path.pop(0)
    text = gen_api_docs.reference()
    for mod, fn in (("cnorm", None), ("sure", None), ("spotlight", None),
                    ("bias", "document_relevance"), ("bias", "position_bias")):
        assert f"### ragform.{mod}\n" in text, mod
        if fn:
            assert f"#### ragform.{mod}.{fn}(" in text, fn
