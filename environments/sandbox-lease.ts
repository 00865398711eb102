// How a sandbox container carries its lease. Docker labels cannot change after creation, so the label holds
// the expiry given at creation and every renewal writes the new expiry to a root-owned file inside the
// container; the lease ends at the later of the two. Both the host-side reaper and a small keeper process
// inside the container (its main process) read the same two values, so an expired container goes away even
// when the worker that held it and the reaper on its host are both dead (docs/containers.md).

export const LABELS = {
  managed: 'openclaw.managed',
  rolloutId: 'openclaw.rollout-id',
  leaseExpiresAt: 'openclaw.lease-expires-at',
  specHash: 'openclaw.spec-hash',
  execUser: 'openclaw.exec-user',
  /** On warm-pool containers only (instead of a rollout id): the pool instance that created it. */
  pool: 'openclaw.pool',
  /** Set by a provider with a `scope`: only providers of the same scope reap or police the container. */
  scope: 'openclaw.scope',
} as const;

/**
 * A claimed warm-pool container's rollout id (its labels, fixed before the claim, carry none): written once,
 * right after the rename that claims the container (warm-pool.ts, docs/containers.md).
 */
export const CLAIM_FILE = '/run/openclaw/claim';

/** Written by `renew` (through the Engine API, as root; mode 0644), read by the keeper and the reaper. */
export const LEASE_FILE = '/run/openclaw/lease';

/** The lease and claim files are root's and readable by all: the keeper reads them, the sandbox user cannot write them. */
export const LEASE_FILE_OWNER = { uid: 0, gid: 0, mode: 0o644 } as const;

/** The file's content: the expiry in epoch milliseconds and a newline. */
export function encodeLeaseFile(expiresAt: number): string {
  return `${Math.floor(expiresAt)}\n`;
}

/** The expiry a lease file holds, or null when it is empty or garbled. */
export function decodeLeaseFile(content: string): number | null {
  const text = content.trim();
  return /^\d{1,16}$/.test(text) ? Number(text) : null;
}

/** The lease's end: the later of the label's expiry and the file's (either may be missing or garbled). */
export function effectiveExpiry(labelValue: string | undefined, fileValue: number | null): number {
  const label = labelValue !== undefined && /^\d{1,16}$/.test(labelValue) ? Number(labelValue) : 0;
  return Math.max(label, fileValue ?? 0);
}

/** Where the keeper blocks between checks: a FIFO it holds open itself, so `read -t` waits without a fork. */
const KEEPER_FIFO = '/run/openclaw/keeper.fifo';

/**
 * The container's main process (under Docker's init, which reaps orphans): it exits once the lease has
 * ended, which stops the container, and Docker's AutoRemove then deletes it. Returns the entrypoint's
 * arguments after `/bin/sh -c`; `initialExpiry` is the lease's end at creation (epoch ms).
 *
 * Its loop must not fork: when the sandbox's processes hold every pid (a fork bomb, a large
 * multiprocessing pool), a shell that cannot fork exits, and the container would go with it. With bash 5
 * it uses only builtins (`$EPOCHSECONDS`, `read -t` on a FIFO); without bash it falls back to POSIX sh with
 * `date` and `sleep`, which does fork (documented in docs/containers.md).
 */
export function leaseKeeperCommand(initialExpiry: number, checkEverySeconds: number): string[] {
  const readRenewal = [
    `  if [ -r ${LEASE_FILE} ] && read -r renewed < ${LEASE_FILE}; then`,
    '    case "$renewed" in *[!0-9]*|"") ;; *) [ "$renewed" -gt "$expires" ] && expires="$renewed" ;; esac',
    '  fi',
  ];
  const bashKeeper = [
    'expires="$1"',
    `mkdir -p ${KEEPER_FIFO.slice(0, KEEPER_FIFO.lastIndexOf('/'))} && rm -f ${KEEPER_FIFO} && mkfifo -m 600 ${KEEPER_FIFO} && exec 3<>${KEEPER_FIFO} || exit 3`,
    'while :; do',
    ...readRenewal,
    '  (( EPOCHSECONDS * 1000 >= expires )) && exit 0',
    `  read -r -t ${checkEverySeconds} -u 3 _`,
    'done',
  ].join('\n');
  const shKeeper = [
    'expires="$1"',
    'while :; do',
    ...readRenewal,
    '  now=$(date +%s) && [ "$((now * 1000))" -ge "$expires" ] && exit 0',
    `  sleep ${checkEverySeconds}`,
    'done',
  ].join('\n');
  const launcher =
    'if command -v bash >/dev/null 2>&1 && bash -c \'[ -n "$EPOCHSECONDS" ]\'; then exec bash -c "$2" keeper "$1"; fi; exec sh -c "$3" keeper "$1"';
  return [launcher, 'openclaw-lease-keeper', String(initialExpiry), bashKeeper, shKeeper];
}
