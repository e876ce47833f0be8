"""MkDocs hooks of the documentation site (mkdocs.yml names this file).

- The build fails when a public module has no `__all__` or no API page, a public class or
  function is left out of its module's `__all__`, or a public name has no docstring
  (docs/api_coverage.py says which).
- An API page's `::: module` renders the module's `__all__`.
- The notebooks stay where they are run and tested (examples/notebooks/); they join the site's
  files here, stored outputs and all, before mkdocs-jupyter renders them.
- MathJax, which the notebooks' formulas need, is served from the site itself (the copy that
  jupyter-server-mathjax ships), so the site works with no network: no CDN, no console errors.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
NOTEBOOKS = ROOT / "examples" / "notebooks"
MATHJAX_TARGET = "assets/mathjax"

sys.path.insert(0, str(DOCS))
import api_coverage  # noqa: E402 (beside this file, which mkdocs loads by path)


def on_config(config):
    found = api_coverage.problems()
    if found:
        shown = "\n  ".join(found[:40]) + ("\n  ..." if len(found) > 40 else "")
        listing = "python docs/api_coverage.py lists it all"
        raise PluginError(f"the API reference is incomplete ({listing}):\n  {shown}")
    return config


def on_page_markdown(markdown, page, config, files):
    """`::: module` on an API page renders that module's __all__, in its order: mkdocstrings,
    which imports the modules (mkdocs.yml says why), would render everything they import too."""
    if not page.file.src_uri.startswith("api/"):
        return markdown
    return re.sub(r"^::: ([\w.]+)\n(?!    )", _members_of_all, markdown, flags=re.M)


def _members_of_all(match) -> str:
    directive, name = match.group(0), match.group(1)
    try:
        module = importlib.import_module(name)
    except ImportError:
        return directive  # a class or a function: rendered whole
    members = [m for m in module.__all__ if not inspect.ismodule(getattr(module, m))]
    return f"::: {name}\n    options:\n      members: {members}\n"


@event_priority(100)  # before mkdocs-jupyter's on_files, which turns .ipynb files into pages
def on_files(files, config):
    # read from examples/ as if it were a docs folder (mkdocs-jupyter rebuilds each notebook's
    # File from its src_dir, so a File of another kind would lose its path)
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        uri = notebook.relative_to(NOTEBOOKS.parent).as_posix()
        files.append(
            File(uri, str(NOTEBOOKS.parent), config["site_dir"], config["use_directory_urls"])
        )
    return files


def on_post_build(config):
    import jupyter_server_mathjax

    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = Path(config["site_dir"]) / MATHJAX_TARGET
    shutil.rmtree(target, ignore_errors=True)
    # the TeX input, the HTML-CSS output and its web fonts: what the config the notebooks load
    # (TeX-AMS-MML_HTMLorMML-full) needs; the localizations and the SVG output stay behind
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("localization", "SVG"))
    # this copy ships the STIX web fonts alone (MathJax's default, TeX, would be fetched and
    # missed): mkdocs.yml's MathJax URL loads this configuration last, as Jupyter's does
    (target / "config" / "local").mkdir(parents=True, exist_ok=True)
    (target / "config" / "local" / "minitrain.js").write_text(MATHJAX_LOCAL_CONFIG)


# MathJax_Blank, a font MathJax measures against, is an `about:blank` URL by default, which
# Chromium refuses with a console error; `local()` names the same nothing without a request
MATHJAX_LOCAL_CONFIG = """\
MathJax.Hub.Config({
  "HTML-CSS": {
    availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null,
    styles: {"@font-face": {"font-family": "MathJax_Blank", src: "local('MathJax_Blank')"}}
  }
});
MathJax.Ajax.loadComplete("[MathJax]/config/local/minitrain.js");
"""
