"""simple_pages: the PEP 503 / 691 pages of a static index, checked against the specs' rules."""

from __future__ import annotations

import html.parser

from kestrel_release.artifacts import simple_pages
from kestrel_release.artifacts.simple_pages import IndexFile

LOCAL = IndexFile(
    "torch_cuda_ext-0.1.0+cu130-cp39-abi3-manylinux_2_28_x86_64.whl",
    "torch_cuda_ext-0.1.0+cu130-cp39-abi3-manylinux_2_28_x86_64.whl",
    "a" * 64,
    10,
    ">=3.10",
    "b" * 64,
)
PLAIN = IndexFile(
    "torch_cuda_ext-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl",
    "https://github.com/o/r/releases/download/v0.1.0/torch_cuda_ext-0.1.0-cp39-abi3-manylinux_2_28_x86_64.whl",
    "c" * 64,
    20,
)


class Anchors(html.parser.HTMLParser):
    """What pip's and uv's HTML parsers take from a page: each <a>'s attributes and text, and the meta tags."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[dict, str]] = []
        self.meta: dict[str, str] = {}
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._open = dict(attrs)
        elif tag == "meta":
            self.meta[dict(attrs)["name"]] = dict(attrs)["content"]

    def handle_data(self, data):
        if self._open is not None:
            self.links.append((self._open, data))
            self._open = None


def parse(page: str) -> Anchors:
    parser = Anchors()
    parser.feed(page)
    return parser


def test_normalize_is_pep503s():
    assert simple_pages.normalize("Torch_CUDA.ext") == "torch-cuda-ext"
    assert simple_pages.normalize("a--b__c..d") == "a-b-c-d"


def test_project_page_links_each_file_with_its_hash_python_floor_and_metadata():
    page = parse(simple_pages.project_html("Torch_CUDA_Ext", [PLAIN, LOCAL]))
    assert page.meta == {"pypi:repository-version": "1.1"}  # PEP 629
    (first, first_text), (second, _) = page.links  # sorted by filename
    assert first_text == LOCAL.filename  # the text is the filename, '+' as is
    # PEP 503: the URL's fragment is <hashname>=<hexdigest>; a local version's '+' is %2B (PyTorch's URLs)
    assert first["href"] == "torch_cuda_ext-0.1.0%2Bcu130-cp39-abi3-manylinux_2_28_x86_64.whl#sha256=" + "a" * 64
    assert first["data-requires-python"] == ">=3.10"  # html-escaped in the source, the parser unescapes
    assert first["data-core-metadata"] == first["data-dist-info-metadata"] == "sha256=" + "b" * 64
    assert second["href"].startswith("https://github.com/o/r/releases/download/v0.1.0/torch_cuda_ext-0.1.0-cp39")
    assert "data-requires-python" not in second and "data-core-metadata" not in second
    assert "&gt;=3.10" in simple_pages.project_html("x", [LOCAL])


def test_project_json_is_pep691_with_pep700_fields():
    doc = simple_pages.project_json("Torch_CUDA_Ext", [LOCAL, PLAIN])
    assert doc["meta"]["api-version"] == "1.1"
    assert doc["name"] == "torch-cuda-ext"
    assert doc["versions"] == ["0.1.0", "0.1.0+cu130"]
    by_name = {f["filename"]: f for f in doc["files"]}
    local = by_name[LOCAL.filename]
    assert local["url"] == "torch_cuda_ext-0.1.0%2Bcu130-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert local["hashes"] == {"sha256": "a" * 64} and local["size"] == 10
    assert local["requires-python"] == ">=3.10"
    assert local["core-metadata"] == {"sha256": "b" * 64}
    assert by_name[PLAIN.filename]["core-metadata"] is False and "requires-python" not in by_name[PLAIN.filename]


def test_root_pages_list_each_project_once_normalized_with_a_trailing_slash():
    page = parse(simple_pages.root_html(["Torch_CUDA_Ext", "torch-cuda-ext", "other"]))
    assert [(a["href"], text) for a, text in page.links] == [("other/", "other"), ("torch-cuda-ext/", "torch-cuda-ext")]
    assert simple_pages.root_json(["B_b", "a"])["projects"] == [{"name": "a"}, {"name": "b-b"}]


def test_json_page_reads_back_as_the_same_records():
    doc = simple_pages.project_json("torch-cuda-ext", [LOCAL, PLAIN])
    assert simple_pages.files_from_json(doc) == sorted([LOCAL, PLAIN])
    assert simple_pages.files_from_json({"meta": {"api-version": "1.1"}, "files": []}) is None  # not ours
    assert simple_pages.projects_from_json(simple_pages.root_json(["a"])) == ["a"]


def test_merge_adds_keeps_and_refuses_other_bytes_under_a_listed_name():
    merged = simple_pages.merge([PLAIN], [LOCAL, PLAIN])
    assert (
        merged.files == sorted([PLAIN, LOCAL]) and merged.added == [LOCAL.filename] and merged.kept == [PLAIN.filename]
    )
    changed = IndexFile(PLAIN.filename, PLAIN.url, "d" * 64, 20)
    refused = simple_pages.merge([PLAIN], [changed])
    assert refused.conflicts == [(PLAIN.filename, "c" * 64, "d" * 64)]


def test_pages_are_byte_identical_for_the_same_input():
    assert simple_pages.project_html("p", [LOCAL, PLAIN]) == simple_pages.project_html("p", [PLAIN, LOCAL])
    assert "TIMESTAMP" not in simple_pages.project_html("p", [LOCAL])  # no clock in a page: a re-run changes nothing
