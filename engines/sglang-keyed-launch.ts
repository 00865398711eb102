// SGLang with its API key kept off the process list. SGLang 0.5.23 takes the key only as `--api-key` (its
// server_args.py reads no variable; `--config <yaml>` would need a key file inside the container), and
// `launch_server` parses `sys.argv[1:]` in its `__main__` block. So the container runs a few lines of Python
// that read the key from OPENCLAW_ENGINE_TOKEN (or the first line of OPENCLAW_ENGINE_TOKEN_FILE), drop both
// from the environment its workers inherit, append `--api-key <key>` to its own `sys.argv` (which
// /proc/<pid>/cmdline, `ps` and `docker top` never show) and run `sglang.launch_server` as `python -m` would.

/** The Python that starts SGLang with the key from the environment; the server's arguments follow it. */
export const SGLANG_KEYED_LAUNCH = [
  'import os, runpy, sys',
  "key_file = os.environ.pop('OPENCLAW_ENGINE_TOKEN_FILE', '')",
  "key = os.environ.pop('OPENCLAW_ENGINE_TOKEN', '') or (open(key_file).readline().strip() if key_file else '')",
  "sys.argv = ['sglang.launch_server', *sys.argv[1:], *(['--api-key', key] if key else [])]",
  "runpy.run_module('sglang.launch_server', run_name='__main__', alter_sys=True)",
].join('\n');

/** `python3 -c <launch> <args>`: SGLang's launch_server with `args`, and the key from the environment. */
export function sglangKeyedCommand(args: readonly string[]): string[] {
  return ['python3', '-c', SGLANG_KEYED_LAUNCH, ...args];
}
