"""PEP 825 (Draft) wheel variants, pure: labels, variant properties, `variant.json`, the index's
`<name>-<version>-variants.json`, and the PEP's rules checked on each (peps/pep-0825.rst, format 0.1.0).

The PEP is a Draft (uv reads it only behind a preview gate, pip not at all), so every line the tool
prints about it says "PEP 825 (Draft)", and no PyPI-like index gets a labelled wheel.

Rules encoded (the PEP's words in ours):
- filename: `{name}-{version}(-{build})?-{python}-{abi}-{platform}(-{label})?.whl`; a label is
  non-empty `[0-9a-z_.]`; `null` is reserved for the variant with zero properties.
- a property is `namespace :: feature :: value`; namespace and feature `^[a-z0-9_]+$`, value
  `^[a-z0-9_.]+$`; a feature lists one or more values.
- `variant.json` in the wheel's .dist-info: `$schema` (a versioned URL), `default-priorities.namespace`
  (required, every namespace used, most important first; `feature`/`property` optional), and `variants`
  holding exactly the wheel's label.
- the index file lists every variant of that version; a label maps to one property set; keys other
  than `variants` agree across wheels (a namespace list may only grow at its end).
How a torch x CUDA variant is expressed: `torch :: version :: 2.13` and `nvidia ::
cuda_version_lower_bound :: 13.0` (the latter as NVIDIA's variant provider names it), label
`torch213_cu130` (`torch213_cxx98_cu130` for the old C++ ABI, with `torch :: cxx_abi :: cxx98`).
"""

from __future__ import annotations

import re
from typing import Any

from kestrel_release.config.variants import Variant

DRAFT = "PEP 825 (Draft)"
SCHEMA = "https://variants-schema.wheelnext.dev/peps/825/v0.1.0.json"
NULL = "null"
NAMESPACES = ["torch", "nvidia"]  # torch first: a torch minor is a hard requirement, the CUDA bound after it
_LABEL = re.compile(r"^[0-9a-z_.]+$")
_NAME = re.compile(r"^[a-z0-9_]+$")  # namespace, feature
_VALUE = re.compile(r"^[a-z0-9_.]+$")
_SCHEMA_VERSION = re.compile(r"/v(\d+)\.(\d+)\.(\d+)\.json$")

Properties = dict[str, dict[str, list[str]]]


def label(v: Variant) -> str:
    abi = "" if v.cxx11_abi else "_cxx98"
    return f"{v.torch_tag}{abi}_{v.cu}"


def properties(v: Variant) -> Properties:
    torch: dict[str, list[str]] = {"version": [v.torch]}
    if not v.cxx11_abi:
        torch["cxx_abi"] = ["cxx98"]
    return {"torch": torch, "nvidia": {"cuda_version_lower_bound": [v.cuda]}}


def variant_json(v: Variant) -> dict[str, Any]:
    """The `variant.json` of one variant's wheels."""
    return {
        "$schema": SCHEMA,
        "default-priorities": {"namespace": list(NAMESPACES)},
        "variants": {label(v): properties(v)},
    }


def split_filename(filename: str) -> tuple[str, str | None]:
    """(the filename without its label, the label or None) of a wheel filename."""
    if not filename.endswith(".whl"):
        return filename, None
    parts = filename[: -len(".whl")].split("-")
    # 5 parts: plain; 7: build tag + label; 6: a build tag starts with a digit, a python tag never does.
    if len(parts) == 7 or (len(parts) == 6 and not parts[2][:1].isdigit()):
        return "-".join(parts[:-1]) + ".whl", parts[-1]
    return filename, None


def labelled_filename(filename: str, lab: str) -> str:
    base, old = split_filename(filename)
    if old is not None:
        raise ValueError(f"{filename} already has the variant label {old!r}")
    return f"{base[: -len('.whl')]}-{lab}.whl"


def index_filename(name: str, version: str) -> str:
    """`{name}-{version}-variants.json`, both normalized as in wheel filenames."""
    from packaging.utils import canonicalize_name, canonicalize_version

    return f"{canonicalize_name(name).replace('-', '_')}-{canonicalize_version(version, strip_trailing_zero=False)}-variants.json"


def problems(data: Any, wheel_label: str | None = None) -> list[str]:
    """Every way `data` (a variant.json, or the index file when wheel_label is None) breaks the PEP."""
    if not isinstance(data, dict):
        return ["not a JSON object"]
    out: list[str] = []
    schema = data.get("$schema")
    if not isinstance(schema, str) or not _SCHEMA_VERSION.search(schema):
        out.append("$schema must be the versioned URL of the variant JSON schema")
    prio = data.get("default-priorities")
    namespaces = prio.get("namespace") if isinstance(prio, dict) else None
    if not isinstance(namespaces, list) or not all(isinstance(n, str) for n in namespaces):
        out.append("default-priorities.namespace is required: a list of namespaces")
        namespaces = []
    variants = data.get("variants")
    if not isinstance(variants, dict):
        return [*out, "variants must map labels to properties"]
    if wheel_label is not None and list(variants) != [wheel_label]:
        out.append(f"a wheel's variants must hold exactly its label {wheel_label!r} (has {sorted(variants)})")
    used: set[str] = set()
    for lab, props in variants.items():
        out += _label_problems(lab, props)
        if isinstance(props, dict):
            used |= set(props)
    missing = sorted(used - set(namespaces))
    if missing:
        out.append(f"default-priorities.namespace lacks {', '.join(missing)} (it must list every namespace used)")
    return out


def _label_problems(lab: Any, props: Any) -> list[str]:
    if not isinstance(lab, str) or not _LABEL.match(lab):
        return [f"label {lab!r} must be non-empty [0-9a-z_.]"]
    if not isinstance(props, dict):
        return [f"{lab}: properties must be an object"]
    if lab == NULL and props:
        return ["label 'null' is reserved for the variant with zero properties"]
    out = []
    for ns, features in props.items():
        if not isinstance(ns, str) or not _NAME.match(ns):
            out.append(f"{lab}: namespace {ns!r} must be [a-z0-9_]")
        if not isinstance(features, dict) or not features:
            out.append(f"{lab}: namespace {ns!r} must map features to values")
            continue
        for feature, values in features.items():
            if not isinstance(feature, str) or not _NAME.match(feature):
                out.append(f"{lab}: feature {ns} :: {feature!r} must be [a-z0-9_]")
            if not isinstance(values, list) or not values:
                out.append(f"{lab}: {ns} :: {feature} must list one or more values")
                continue
            bad = [v for v in values if not isinstance(v, str) or not _VALUE.match(v)]
            if bad:
                out.append(f"{lab}: {ns} :: {feature} :: {bad[0]!r} must be non-empty [a-z0-9_.]")
    return out


def merge(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The index file of one version from its wheels' variant.json (the PEP's merge: disjoint labels
    add up, a label seen twice must carry the same properties, the namespace list may only grow at
    its end). ValueError, one line, on a conflict."""
    if not documents:
        raise ValueError("no variant.json to merge")
    out: dict[str, Any] = {"$schema": documents[0]["$schema"], "default-priorities": {"namespace": []}, "variants": {}}
    for doc in documents:
        if doc["$schema"] != out["$schema"]:
            raise ValueError(f"variant.json schemas differ: {out['$schema']} and {doc['$schema']}")
        mine, theirs = out["default-priorities"]["namespace"], doc["default-priorities"]["namespace"]
        if theirs[: len(mine)] == mine:
            out["default-priorities"]["namespace"] = list(theirs)
        elif mine[: len(theirs)] != theirs:
            raise ValueError(f"default-priorities.namespace differ: {mine} and {theirs}")
        for lab, props in doc["variants"].items():
            if lab in out["variants"] and out["variants"][lab] != props:
                raise ValueError(f"variant label {lab!r} names two property sets")
            out["variants"][lab] = props
    out["variants"] = dict(sorted(out["variants"].items()))
    return out
