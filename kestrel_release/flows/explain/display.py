"""explain's human output: the wheel, then per GPU one line per binary (the image loaded, or why not
and the fix). The failure's one `error:` line comes from raise_for; this shows the whole answer."""

from __future__ import annotations

from kestrel_release.flows.explain.result import ExplainReport
from kestrel_release.ui import console


def render(report: ExplainReport) -> None:
    console.info(f"machine: Python {report.python}, {report.platform}")
    if not report.wheel:
        console.warn(f"no wheel: {report.why}")
        console.info(f"  fix: {report.fix}")
        return
    console.info(f"wheel: {report.wheel}")
    if report.no_cuda:
        console.ok("the wheel carries no CUDA code: nothing for the GPU or driver to refuse")
    for line in report.unreadable:
        console.warn(f"unreadable: {line}")
    for result in report.gpus:
        name = f" ({result.name})" if result.name else ""
        driver = f"driver {result.driver}" if result.driver else "driver not given (its floor is shown)"
        console.info(f"{result.gpu}{name}, {driver}:")
        for choice in result.choices:
            if choice.image is not None:
                img = choice.image
                where = img.member if img.member == choice.binary else f"{choice.binary} -> {img.member}"
                made = f", CUDA {img.cuda}" if img.cuda else ""
                packed = ", compressed" if img.compressed else ""
                console.ok(
                    f"{where}: {img.arch}{made}{packed}: {choice.how}; needs driver >= {choice.needs_driver or 'any'}"
                )
                for line in choice.passed_over:
                    console.info(f"    passed over {line}")
            else:
                console.warn(f"{choice.binary}: none loads")
                for line in choice.why:
                    console.info(f"    {line}")
                console.info(f"    fix: {choice.fix}")
