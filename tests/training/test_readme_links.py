"""The README's links and pictures point at files that exist, and its Learn section lists every
notebook. (The pages of docs/, benchmarks/README.md among them, are the documentation site's:
`make docs` fails on a broken link there.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"]
NOTEBOOKS = ROOT / "examples" / "notebooks"
IMAGE_LIMIT_BYTES = 100 * 1024  # pictures stay small, so cloning the repository stays quick

FENCED = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")


def _links(page: Path) -> list[tuple[bool, str]]:
    """(is an image, target) of each markdown link of `page`, outside code."""
    text = FENCED.sub("", page.read_text(encoding="utf-8"))
    # A link's text may be code (`00_from_scratch`): keep its text, drop other code spans.
    text = re.sub(r"\[`([^`\n]*)`\]", r"[\1]", text)
    text = CODE_SPAN.sub("", text)
    return [(bang == "!", target) for bang, _, target in LINK.findall(text)]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCED.sub("", page.read_text(encoding="utf-8"))
    return {_anchor(heading) for heading in re.findall(r"^#+\s+(.*)$", text, re.M)}


def _local(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # not http:, https:, mailto:...


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_local_links_point_at_files_that_exist(page):
    links = [target for _, target in _links(page) if _local(target)]
    assert links, f"{page.name}: no links found (has the link pattern stopped matching?)"
    broken = []
    for target in links:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target} (no {resolved.relative_to(ROOT)})")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no heading #{anchor} in {resolved.name})")
    assert not broken, f"{page.relative_to(ROOT)}: broken links: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_link_leaves_the_repository(page):
    """Relative links only inside the repository (a link to ../shared breaks on GitHub)."""
    outside = [
        target
        for _, target in _links(page)
        if _local(target)
        and target.split("#")[0]
        and not (page.parent / target.split("#")[0]).resolve().is_relative_to(ROOT)
    ]
    assert not outside, f"{page.relative_to(ROOT)}: links outside the repository: {outside}"


def test_readme_pictures_exist_are_png_and_small():
    images = [target for is_image, target in _links(ROOT / "README.md") if is_image]
    assert len(images) >= 2, (
        f"the README shows {len(images)} pictures, expected the graph view and curves"
    )
    for target in images:
        assert _local(target), f"README picture {target}: use a path inside the repository"
        path = ROOT / target
        assert path.is_file(), f"README picture {target} is missing (docs/images/make_images.py)"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{target} is not a PNG"
        size = path.stat().st_size
        assert size <= IMAGE_LIMIT_BYTES, f"{target} is {size / 1024:.0f} KB, keep it under 100 KB"


def test_the_learn_section_links_every_notebook_in_order():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Learn\n(.*?)^## ", text, re.M | re.S)
    assert match, "README.md has no '## Learn' section"
    linked = re.findall(r"\]\(examples/notebooks/([^)/]+\.ipynb)\)", match.group(1))
    stored = sorted(path.name for path in NOTEBOOKS.glob("*.ipynb"))
    assert linked == sorted(linked), f"the Learn section lists the notebooks out of order: {linked}"
    missing = sorted(set(stored) - set(linked))
    assert not missing, f"notebooks the README's Learn section does not list: {missing}"
    absent = sorted(set(linked) - set(stored))
    assert not absent, f"the Learn section lists notebooks that are not in {NOTEBOOKS}: {absent}"
