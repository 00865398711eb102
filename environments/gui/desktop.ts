// The desktop inside an episode's container. The container's main process is the sandbox lease keeper, so
// the display stack is started through exec: Xvfb on DISPLAY :0 and the openbox window manager, each in its
// own session (setsid) so they outlive the exec that started them, which then waits until the display answers
// and the window manager has taken it. Applications are started the same way; screenshots are `xwd` of the
// root window turned into a PNG (scaled down) by netpbm, and come back as `data:image/png;base64,` URLs.

import type { ExecResult, Sandbox } from '../sandbox.js';
import type { ScreenSize } from './gui-config.js';

export const DISPLAY = ':0';
export const AGENT_HOME = '/home/agent';
/** Environment of every command run on the desktop. */
export const DESKTOP_ENV = { DISPLAY, HOME: AGENT_HOME };
const WORK_DIR = '/tmp/openclaw-gui';
const SCREENSHOT_FILE = `${WORK_DIR}/screen.png`;

/** Runs an argv on the desktop as the sandbox user. */
export function runOnDesktop(
  sandbox: Sandbox,
  command: string[],
  timeoutMs: number,
  stdin?: string,
): Promise<ExecResult> {
  return sandbox.exec(command, {
    timeoutMs,
    env: DESKTOP_ENV,
    workdir: AGENT_HOME,
    ...(stdin !== undefined ? { stdin } : {}),
  });
}

/** Runs a shell script (with positional arguments) on the desktop. */
export function runScript(sandbox: Sandbox, script: string, args: string[], timeoutMs: number) {
  return runOnDesktop(sandbox, ['sh', '-c', script, 'sh', ...args], timeoutMs);
}

/** Polls `$1` (a shell condition) every 0.2 s until it holds or `$2` tenths of a second pass. */
const POLL =
  'until_true() { n=0; while ! sh -c "$1" >/dev/null 2>&1; do n=$((n+2)); [ "$n" -ge "$2" ] && return 1; sleep 0.2; done; }';

const START_DESKTOP = `${POLL}
set -u
mkdir -p ${WORK_DIR}
tenths=$(( $3 / 100 ))
if ! xdpyinfo >/dev/null 2>&1; then
  setsid nohup Xvfb ${DISPLAY} -screen 0 "$1x$2x24" -nolisten tcp -noreset >${WORK_DIR}/xvfb.log 2>&1 </dev/null &
  until_true "xdpyinfo" "$tenths" || { echo "the X display did not start:"; cat ${WORK_DIR}/xvfb.log; exit 1; }
fi
if ! xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id'; then
  setsid nohup openbox >${WORK_DIR}/openbox.log 2>&1 </dev/null &
  until_true "xprop -root _NET_SUPPORTING_WM_CHECK | grep -q 'window id'" "$tenths" || { echo "the window manager did not start:"; cat ${WORK_DIR}/openbox.log; exit 1; }
  # openbox announces itself before it handles windows, and a window mapped in between may stay unmapped:
  # show a probe window until openbox has managed one (retrying if the first one was missed).
  ready=0; tries=0
  while [ "$ready" = 0 ] && [ "$tries" -lt $(( tenths / 20 + 1 )) ]; do
    tries=$((tries + 1))
    setsid nohup xlogo -geometry 8x8+0+0 -name openclaw-wm-probe >/dev/null 2>&1 </dev/null &
    probe=$!
    until_true "xdotool search --onlyvisible --classname openclaw-wm-probe" 20 && ready=1
    kill "$probe" 2>/dev/null
  done
  [ "$ready" = 1 ] || { echo "the window manager does not manage windows:"; cat ${WORK_DIR}/openbox.log; exit 1; }
  until_true "! xdotool search --classname openclaw-wm-probe" 20
fi
`;

/** Starts Xvfb and openbox unless they already run, and waits until both are up. */
export async function startDesktop(sandbox: Sandbox, screen: ScreenSize, timeoutMs: number): Promise<void> {
  const result = await runScript(
    sandbox,
    START_DESKTOP,
    [String(screen.width), String(screen.height), String(timeoutMs)],
    timeoutMs * 2 + 5_000,
  );
  if (result.exitCode !== 0) throw new Error(`the desktop did not start: ${outputOf(result)}`);
}

/** Starts a program detached from the exec (its own session, no terminal), as the sandbox user. */
export async function launchDetached(sandbox: Sandbox, command: string[], timeoutMs: number): Promise<void> {
  const result = await runScript(
    sandbox,
    `mkdir -p ${WORK_DIR}; setsid nohup "$@" >>${WORK_DIR}/apps.log 2>&1 </dev/null &`,
    command,
    timeoutMs,
  );
  if (result.exitCode !== 0) throw new Error(`cannot launch ${command.join(' ')}: ${outputOf(result)}`);
}

/** Finds a visible window whose class, instance or title matches the (case-insensitive) regex `$1`. */
const FIND_WINDOW =
  'for by in --class --classname --name; do xdotool search --onlyvisible $by "$1" >/dev/null 2>&1 && exit 0; done; exit 1';

/** Whether a visible window's class, instance or title matches the regex. */
export async function windowExists(sandbox: Sandbox, pattern: string, timeoutMs: number): Promise<boolean> {
  return (await runScript(sandbox, FIND_WINDOW, [pattern], timeoutMs)).exitCode === 0;
}

/** Waits until a visible window matches `pattern` (see windowExists); throws after `timeoutMs`. */
export async function waitForWindow(sandbox: Sandbox, pattern: string, timeoutMs: number): Promise<void> {
  const script = `n=0
while :; do
  for by in --class --classname --name; do xdotool search --onlyvisible $by "$1" >/dev/null 2>&1 && exit 0; done
  n=$((n+2)); [ "$n" -ge "$2" ] && exit 1; sleep 0.2
done`;
  const result = await runScript(
    sandbox,
    script,
    [pattern, String(Math.ceil(timeoutMs / 100))],
    timeoutMs + 10_000,
  );
  if (result.exitCode !== 0) {
    throw new Error(`no window matching "${pattern}" appeared within ${timeoutMs / 1000} s`);
  }
}

/** The screen as a PNG data URL, scaled down to `maxWidth` when wider. */
export async function screenshot(
  sandbox: Sandbox,
  screen: ScreenSize,
  maxWidth: number,
  timeoutMs: number,
): Promise<string> {
  const scale = screen.width > maxWidth ? `| pamscale -width ${maxWidth} ` : '';
  const result = await runScript(
    sandbox,
    `set -e; mkdir -p ${WORK_DIR}; xwd -root -silent -display ${DISPLAY} | xwdtopnm 2>/dev/null ${scale}| pnmtopng > ${SCREENSHOT_FILE}.part 2>/dev/null; mv ${SCREENSHOT_FILE}.part ${SCREENSHOT_FILE}`,
    [],
    timeoutMs,
  );
  if (result.exitCode !== 0) throw new Error(`screenshot failed: ${outputOf(result)}`);
  const png = await sandbox.readFile(SCREENSHOT_FILE);
  return `data:image/png;base64,${png.toString('base64')}`;
}

export function outputOf(result: ExecResult): string {
  if (result.timedOut) return 'timed out';
  const text = [result.stdout.trim(), result.stderr.trim()].filter(Boolean).join('\n');
  return `${text || '(no output)'} (exit ${result.exitCode})`;
}
