// Non-blocking processes for `shell_exec(block=false)`, `shell_view` and `shell_write_to_process`. Everything
// about a process lives in the container, in /tmp/openclaw-shell/<id>/ (its command, a FIFO it reads its input
// from, its output, its pid and, once it ended, its exit status), so whichever worker takes the next step
// finds it. The process runs in its own session (setsid) as the sandbox's user, outside the exec that started
// it, and holds its own FIFO open for reading and writing, so a writer never blocks and input never ends.

import type { Sandbox } from '../sandbox.js';

const SESSIONS_DIR = '/tmp/openclaw-shell';
const SESSION_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const CONTROL_TIMEOUT_MS = 15_000;

/** Waits this long after starting a process or writing to it, so the reply already shows its first output. */
export const SETTLE_MS = 1_000;

const START = `
set -e
d=${SESSIONS_DIR}/$1
if [ -f "$d/pid" ] && [ ! -f "$d/exit" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
  echo "a process with id $1 is still running; use shell_view or another id" >&2; exit 3
fi
rm -rf "$d"; mkdir -p "$d"; mkfifo "$d/in"; : > "$d/out"
printf '%s\\n' "$2" > "$d/cmd"
setsid bash -c 'exec 3<>"$1/in"; bash "$1/cmd" <&3 >>"$1/out" 2>&1; echo $? > "$1/exit"' _ "$d" </dev/null >/dev/null 2>&1 &
echo $! > "$d/pid"
`;

const VIEW = `
d=${SESSIONS_DIR}/$1
[ -d "$d" ] || { echo "no process with id $1" >&2; exit 3; }
sleep "$2"
out=$(cat "$d/out"; echo .); out=\${out%.}
printf '%s' "$out"; [ -z "$out" ] || [ "\${out: -1}" = $'\\n' ] || echo
if [ -f "$d/exit" ]; then echo "[process $1 exited with code $(cat "$d/exit")]";
elif kill -0 "$(cat "$d/pid")" 2>/dev/null; then echo "[process $1 is still running]";
else echo "[process $1 was killed]"; fi
`;

const WRITE = `
d=${SESSIONS_DIR}/$1
[ -d "$d" ] || { echo "no process with id $1" >&2; exit 3; }
if [ -f "$d/exit" ] || ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then echo "process $1 is not running" >&2; exit 3; fi
printf '%s\\n' "$2" > "$d/in"
`;

export function checkSessionId(id: unknown): string {
  if (typeof id !== 'string' || !SESSION_ID.test(id))
    throw new SessionError('"id" must be 1-64 letters, digits, ".", "_" or "-"');
  return id;
}

/** A call the container refused (unknown id, a process not running), reported as `ValueError`. */
export class SessionError extends Error {
  override name = 'ValueError';
}

async function control(sandbox: Sandbox, script: string, args: string[]): Promise<string> {
  const result = await sandbox.exec(['bash', '-c', script, 'session', ...args], {
    timeoutMs: CONTROL_TIMEOUT_MS,
  });
  if (result.exitCode === 3) throw new SessionError(result.stderr.trim());
  if (result.exitCode !== 0 || result.timedOut)
    throw new Error(
      `session control failed (${result.timedOut ? 'timed out' : `exit code ${result.exitCode}`}): ${result.stderr.trim()}`,
    );
  return result.stdout;
}

/** Starts `command` in the background as process `id`; returns its output after a short wait. */
export async function startProcess(sandbox: Sandbox, id: string, command: string): Promise<string> {
  await control(sandbox, START, [id, command]);
  return viewProcess(sandbox, id, SETTLE_MS);
}

/** The process's whole output so far and whether it still runs. */
export async function viewProcess(sandbox: Sandbox, id: string, waitMs = 0): Promise<string> {
  return (await control(sandbox, VIEW, [id, (waitMs / 1000).toFixed(3)])).trimEnd();
}

/** Sends one line to the process's standard input; returns its output after a short wait. */
export async function writeToProcess(sandbox: Sandbox, id: string, input: string): Promise<string> {
  await control(sandbox, WRITE, [id, input]);
  return viewProcess(sandbox, id, SETTLE_MS);
}
