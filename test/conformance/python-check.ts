// Runs one of the conformance checkers (sglang_check.py in .venv-sglang, vllm_check.py in .venv-vllm) over
// request bodies and command lines, and returns its verdicts. The checkers import the engines' own code.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { EngineCall } from '../../engines/engine-http.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Verdict {
  ok: boolean;
  error: string | null;
}

export interface CheckResult {
  calls: (Verdict & { path: string })[];
  commands: (Verdict & { argv: string[] })[];
}

const CHECKERS = {
  sglang: {
    python: `${ROOT}.venv-sglang/bin/python`,
    script: `${ROOT}test/conformance/sglang_check.py`,
    setup: 'bash scripts/sglang-conformance-setup.sh',
  },
  vllm: {
    python: `${ROOT}.venv-vllm/bin/python`,
    script: `${ROOT}test/conformance/vllm_check.py`,
    setup: 'bash scripts/vllm-setup.sh',
  },
} as const;

export async function checkWithEngineCode(
  engine: keyof typeof CHECKERS,
  input: { calls?: EngineCall[]; commands?: string[][] },
): Promise<CheckResult> {
  const checker = CHECKERS[engine];
  if (!existsSync(checker.python))
    throw new Error(`${checker.python} is missing: run \`${checker.setup}\` (.ci/run does)`);
  return (await runPythonJson(checker.python, checker.script, input)) as CheckResult;
}

/** Runs `python script` with `input` as JSON on stdin; resolves with the JSON it prints. */
export async function runPythonJson(python: string, script: string, input: unknown): Promise<unknown> {
  const child = spawn(python, ['-W', 'ignore', script], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  child.stdin.end(JSON.stringify(input));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${script} exited ${code}:\n${err.slice(-3000)}`);
  return JSON.parse(out) as unknown;
}

/** The verdicts that failed, with what was checked, for a readable assertion message. */
export function failures(result: CheckResult): string[] {
  return [
    ...result.calls.filter((c) => !c.ok).map((c) => `${c.path}: ${c.error}`),
    ...result.commands.filter((c) => !c.ok).map((c) => `${c.argv.join(' ')}: ${c.error}`),
  ];
}
