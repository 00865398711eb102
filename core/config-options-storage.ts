// The sample store, payload encryption, the codec server and sessions' lifetimes: the last rows of the option
// table (core/config-options.ts), in the order docs/configuration.md lists them.

import type { ConfigOption } from './config-option.js';

export const STORAGE_OPTIONS = [
  {
    key: 'store.backend',
    env: 'OPENCLAW_STORE',
    kind: 'enum',
    description:
      "Where turns, samples, exclusions, lineage and the outbox live: `file` (a folder under `dataDir`, fsync'd; one machine) or `postgres` (several gateways and workers on several machines share it).",
  },
  {
    key: 'store.url',
    env: 'OPENCLAW_STORE_URL',
    kind: 'string',
    defaultNote: 'empty (needed for `postgres`)',
    description: "The PostgreSQL store's server, `postgres://user:password@host:port/database`.",
  },
  {
    key: 'store.outboxLeaseMs',
    env: 'OPENCLAW_OUTBOX_LEASE_MS',
    kind: 'integer',
    description:
      "How long a relay keeps the outbox entries it claimed without renewing: a dead gateway's undelivered turns are delivered by another gateway after this long, or by the control worker once they are older than this and `store.outboxYieldMs`.",
  },
  {
    key: 'store.outboxYieldMs',
    env: 'OPENCLAW_OUTBOX_YIELD_MS',
    kind: 'integer',
    description:
      "How long a gateway's relay may hold a recorded turn's delivery while the gateway is answering requests (until it has been idle 50 ms), so deliveries and the workflow work they start do not take CPU from generation and from the durable writes; the turn is already durable, only its delivery lag grows. 0 delivers at once. The control worker's relay leaves an entry younger than this and `store.outboxLeaseMs` to the gateway that wrote it.",
  },
  {
    key: 'store.journal',
    env: 'OPENCLAW_STORE_JOURNAL',
    kind: 'boolean',
    description:
      'file store: a main turn is made durable by one append (and one fdatasync shared by the turns arriving together) to a journal under the store, and its files are written right after the answer; a gateway that dies in between has its journal replayed by the next relay that claims. `false` writes the files before answering.',
  },
  {
    key: 'store.poolSize',
    env: 'OPENCLAW_STORE_POOL_SIZE',
    kind: 'integer',
    description:
      "postgres store: connections per process (each gateway, worker and relay). More lets more concurrent turns commit at once; PostgreSQL's `max_connections` (100 by default) bounds the sum over all processes.",
  },
  {
    key: 'payloads.encryption',
    env: 'OPENCLAW_PAYLOAD_ENCRYPTION',
    kind: 'enum',
    description:
      'Encryption of Temporal payloads (AES-256-GCM codec): `auto` encrypts when a key is configured or the keys file exists (`dev` creates it), `required` refuses to start without a key, `off` sends plaintext.',
  },
  {
    key: 'payloads.keys',
    env: 'OPENCLAW_PAYLOAD_KEYS',
    kind: 'string-list',
    description:
      'Payload keys as `<id>:<base64 of 32 bytes>`, comma-separated; when set, the keys file is not read. Any listed key decrypts; `keyId` encrypts.',
  },
  {
    key: 'payloads.keyId',
    env: 'OPENCLAW_PAYLOAD_KEY_ID',
    kind: 'string',
    defaultNote: 'the only key, when one is listed',
    description:
      'Id of the key in `payloads.keys` that encrypts new payloads (the newest one, when rotating).',
  },
  {
    key: 'payloads.keysFile',
    env: 'OPENCLAW_PAYLOAD_KEYS_FILE',
    kind: 'string',
    defaultNote: '`<dataDir>/keys/payload-keys.json`',
    description:
      'JSON key ring `{"current": id, "keys": {id: base64}}`; `openclaw-rl keys init` creates it, `openclaw-rl keys rotate` adds a key and makes it current.',
  },
  {
    key: 'codecServer.host',
    env: 'OPENCLAW_CODEC_HOST',
    kind: 'string',
    description:
      'Address of the codec server (`openclaw-rl codec-server`, `dev`) that decrypts payloads for the Temporal UI; whoever reaches it can decrypt.',
  },
  {
    key: 'codecServer.port',
    env: 'OPENCLAW_CODEC_PORT',
    kind: 'integer',
    description: "Port of the codec server: the UI's codec endpoint is `http://<host>:<port>`.",
  },
  {
    key: 'codecServer.corsOrigins',
    env: 'OPENCLAW_CODEC_CORS_ORIGINS',
    kind: 'string-list',
    defaultNote:
      'the UI of `dev` and of compose: `http://localhost:8233`, `http://localhost:8080` (and on 127.0.0.1)',
    description:
      'Comma-separated origins of the Temporal UI pages allowed to call the codec server; a request from any other `Origin` is refused (403).',
  },
  {
    key: 'codecServer.hosts',
    env: 'OPENCLAW_CODEC_HOSTS',
    kind: 'string-list',
    defaultNote: '`localhost`, `127.0.0.1`, `::1` (always allowed)',
    description:
      "Comma-separated host names (no port) a request's `Host` header may name besides loopback; any other is refused (421), so a page that rebinds its own name to 127.0.0.1 cannot reach it.",
  },
  {
    key: 'codecServer.token',
    env: 'OPENCLAW_CODEC_TOKEN',
    kind: 'string',
    description:
      'Token every codec request must carry, as `Authorization: Bearer <token>` (the `temporal` CLI: `TEMPORAL_CODEC_AUTH`) or as the first path segment of the endpoint (the Temporal UI: `http://127.0.0.1:8234/<token>`); when empty, the first line of `codecServer.tokenFile`.',
  },
  {
    key: 'codecServer.tokenFile',
    env: 'OPENCLAW_CODEC_TOKEN_FILE',
    kind: 'string',
    defaultNote: '`<dataDir>/keys/codec-token`',
    description:
      'File holding the codec token (first line); `openclaw-rl keys init`, `codec-server` and `dev` create it (0600) when it is missing.',
  },
  {
    key: 'session.idleTimeoutMs',
    env: 'OPENCLAW_SESSION_IDLE_TIMEOUT_MS',
    kind: 'integer',
    description:
      'A session with no new turn for this long closes; its open turns wait for `session.reopenHorizonMs` before they are settled.',
  },
  {
    key: 'session.reopenHorizonMs',
    env: 'OPENCLAW_SESSION_REOPEN_HORIZON_MS',
    kind: 'integer',
    description:
      "How long after a turn a reply still pairs with it, reopening a closed session; then the session's open turns settle as `no-next-state`. At most `idleTimeoutMs`: settle at the idle close.",
  },
  {
    key: 'session.superseded',
    env: 'OPENCLAW_SESSION_SUPERSEDED',
    kind: 'enum',
    description:
      'A response the conversation did not continue while another response to the same request was: `exclude` (settled as `superseded`) or `negative` (trained with reward -1: the user asked for another answer; rl and combine).',
  },
  {
    key: 'feedback.rating',
    env: 'OPENCLAW_FEEDBACK_RATING',
    kind: 'enum',
    description:
      "How a rating sent to `POST /v1/feedback` meets the judge: `override` (the rating is the reward; the judge is not asked for a vote) or `join` (its sign is one more vote beside the judge's, the majority decides).",
  },
  {
    key: 'feedback.correction',
    env: 'OPENCLAW_FEEDBACK_CORRECTION',
    kind: 'enum',
    description:
      'How a correction sent to `POST /v1/feedback` becomes the hindsight hint for opd and combine: `as-given` (the teacher prompt carries it verbatim) or `judged` (the hint judge reads it as the next state and writes the hint).',
  },
  {
    key: 'adapters.tenants',
    env: 'OPENCLAW_ADAPTER_TENANTS',
    kind: 'string-list',
    description:
      'Tenants that get a policy of their own: a LoRA adapter on the shared base, trained only from their turns and feedback (run `<runId>~<tenant>`) and serving only their requests; `*` gives every tenant one. Others are served and trained by the shared run (docs/tenants.md).',
  },
  {
    key: 'adapters.rank',
    env: 'OPENCLAW_ADAPTER_RANK',
    kind: 'integer',
    description:
      "LoRA rank of the tenants' adapters (alpha 2×rank), on the reference engine's adapter trainers.",
  },
  {
    key: 'adapters.maxLoaded',
    env: 'OPENCLAW_ADAPTER_MAX_LOADED',
    kind: 'integer',
    description:
      "Adapters the policy engine holds at once (the reference engine's `--max-loras`, vLLM's `--max-loras` and `--max-cpu-loras`).",
  },
  {
    key: 'adapters.onBaseChange',
    env: 'OPENCLAW_ADAPTER_ON_BASE_CHANGE',
    kind: 'enum',
    description:
      "What a tenant's adapter does when the base model (`engine.model`) is no longer the one it was trained on: `keep` (served and trained on over the new base) or `reset` (not served; the tenant is served by the base and its run starts anew).",
  },
  {
    key: 'session.continueAsNewAfterTurns',
    env: 'OPENCLAW_SESSION_CONTINUE_AS_NEW_TURNS',
    kind: 'integer',
    description: 'Turns after which a session workflow continues as new, keeping its history short.',
  },
] as const satisfies readonly ConfigOption[];
