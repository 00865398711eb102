// The sample store in PostgreSQL, for gateways and workers on several machines sharing one store. Turns,
// samples, exclusions and lineage have a table each, and every other key (teacher log-probs, rollout records)
// goes to `records`; each row is a key, the record as JSON text with its long number arrays packed as binary
// beside it (packed-arrays.ts; docs/benchmarks.md has the comparison with plain JSON and jsonb). Create-if-absent
// is an insert that does nothing on a primary-key conflict, and a turn with its outbox entry is one statement,
// so one transaction: both are durable when it returns (PostgreSQL's defaults, fsync and synchronous_commit on).
// The outbox is two tables: entries in commit order, and one lease row per session being delivered.

import pg from 'pg';
import {
  type Claim,
  type ClaimLimit,
  type Outbox,
  type OutboxEntry,
  type OutboxStats,
  parseOutboxEntry,
} from './outbox.js';
import { packRecord, unpackRecord } from './packed-arrays.js';
import type { CreateOptions, SampleStore } from './sample-store.js';

/** Tables by the first part of a key; everything else is in `records`. */
const TABLES = ['turns', 'samples', 'exclusions', 'lineage'] as const;
const OTHER_TABLE = 'records';
const ALL_TABLES = [...TABLES, OTHER_TABLE] as const;

function tableOf(key: string): string {
  const slash = key.indexOf('/');
  const first = slash < 0 ? key : key.slice(0, slash);
  return (TABLES as readonly string[]).includes(first) ? first : OTHER_TABLE;
}

/** Keys sort and compare bytewise (they are ASCII: every part is URI-encoded), like the filesystem store's. */
const SCHEMA = [
  ...ALL_TABLES.flatMap((table) => [
    `CREATE TABLE IF NOT EXISTS ${table} (
      key text COLLATE "C" PRIMARY KEY,
      doc json NOT NULL,
      arrays bytea,
      written_at timestamptz NOT NULL DEFAULT now())`,
    // Token ids and log-probs do not compress: stored out of line as they are, without a compression attempt.
    `ALTER TABLE ${table} ALTER COLUMN arrays SET STORAGE EXTERNAL`,
  ]),
  `CREATE TABLE IF NOT EXISTS outbox (
    seq bigserial PRIMARY KEY,
    id text NOT NULL UNIQUE,
    session_id text NOT NULL,
    message jsonb NOT NULL,
    workflow jsonb NOT NULL,
    created_at bigint NOT NULL)`,
  'CREATE INDEX IF NOT EXISTS outbox_by_session ON outbox (session_id, seq)',
  `CREATE TABLE IF NOT EXISTS outbox_leases (
    session_id text PRIMARY KEY,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL)`,
];

/** PostgreSQL's error codes for a database that does not exist, one that already does, a duplicate key. */
const UNDEFINED_DATABASE = '3D000';
const DUPLICATE_DATABASE = '42P04';
const UNIQUE_VIOLATION = '23505';

/** Any fixed number: the advisory lock that keeps two processes from creating the tables at once. */
const SCHEMA_LOCK = 0x6f70636c;

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` */
  url: string;
  /** Connections in the pool (default 20). */
  poolSize?: number;
  /** How long to wait for a connection, ms (default 5 s): a down database fails writes instead of hanging. */
  connectTimeoutMs?: number;
}

export class PostgresSampleStore implements SampleStore {
  readonly outbox: PostgresOutbox;
  private readonly pool: pg.Pool;
  private schemaReady: Promise<void> | null = null;

  private readonly url: string;

  constructor(options: PostgresStoreOptions) {
    this.url = options.url;
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 20,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    });
    // An idle connection the server dropped (a restart) must not crash the process; the pool replaces it.
    this.pool.on('error', () => undefined);
    this.outbox = new PostgresOutbox((text, values) => this.query(text, values));
  }

  /** Runs a query once the tables exist (made on first use, by whichever process comes first). */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    await this.ensureSchema();
    return this.pool.query<R>(text, values);
  }

  private ensureSchema(): Promise<void> {
    this.schemaReady ??= this.createSchema().catch((error) => {
      this.schemaReady = null; // the database was not there yet: try again on the next call
      throw error;
    });
    return this.schemaReady;
  }

  private async createSchema(): Promise<void> {
    const client = await this.pool.connect().catch(async (error: { code?: string }) => {
      // A database that does not exist yet (a new deployment) is created, then connected to.
      if (error.code !== UNDEFINED_DATABASE) throw error;
      await this.createDatabase();
      return this.pool.connect();
    });
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
      for (const statement of SCHEMA) await client.query(statement);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** CREATE DATABASE through the server's `postgres` database (the URL's user needs CREATEDB). */
  private async createDatabase(): Promise<void> {
    const url = new URL(this.url);
    const name = decodeURIComponent(url.pathname.slice(1));
    url.pathname = '/postgres';
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    } catch (error) {
      // Another process was first: 42P04, or a unique violation when both got there at the same moment.
      const code = (error as { code?: string }).code;
      if (code !== DUPLICATE_DATABASE && code !== UNIQUE_VIOLATION) throw error;
    } finally {
      await admin.end();
    }
  }

  async put(key: string, value: unknown): Promise<void> {
    checkKey(key);
    const { json, arrays } = packRecord(value);
    await this.query(
      `INSERT INTO ${tableOf(key)} (key, doc, arrays) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET doc = EXCLUDED.doc, arrays = EXCLUDED.arrays, written_at = now()`,
      [key, json, arrays],
    );
  }

  async putIfAbsent(key: string, value: unknown, options: CreateOptions = {}): Promise<boolean> {
    checkKey(key);
    const { json, arrays } = packRecord(value);
    const table = tableOf(key);
    const entry = options.outbox;
    const alongside = options.alongside ?? [];
    if (!entry && alongside.length === 0) {
      const result = await this.query(
        `INSERT INTO ${table} (key, doc, arrays) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING key`,
        [key, json, arrays],
      );
      return result.rowCount === 1;
    }
    // One statement, so one transaction and one commit: the entry and the other keys are written exactly when
    // the value is created by it (data-modifying WITH clauses run whether the last SELECT reads them or not).
    const values: unknown[] = [key, json, arrays];
    const parameter = (value: unknown) => {
      values.push(value);
      return `$${values.length}`;
    };
    const clauses = [
      `created AS (
         INSERT INTO ${table} (key, doc, arrays) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING RETURNING key)`,
    ];
    if (entry) {
      const [id, sessionId, message, workflow, createdAt] = entryValues(entry).map(parameter);
      clauses.push(`queued AS (
         INSERT INTO outbox (id, session_id, message, workflow, created_at)
         SELECT ${id}::text, ${sessionId}::text, ${message}::jsonb, ${workflow}::jsonb, ${createdAt}::bigint
         FROM created ON CONFLICT (id) DO NOTHING)`);
    }
    alongside.forEach((write, i) => {
      checkKey(write.key);
      const packed = packRecord(write.value);
      const columns = `${parameter(write.key)}::text, ${parameter(packed.json)}::json, ${parameter(packed.arrays)}::bytea`;
      const conflict = write.ifAbsent
        ? 'DO NOTHING'
        : 'DO UPDATE SET doc = EXCLUDED.doc, arrays = EXCLUDED.arrays, written_at = now()';
      clauses.push(`alongside_${i} AS (
         INSERT INTO ${tableOf(write.key)} (key, doc, arrays) SELECT ${columns} FROM created
         ON CONFLICT (key) ${conflict})`);
    });
    const result = await this.query<{ created: string }>(
      `WITH ${clauses.join(',\n')}
       SELECT (SELECT count(*) FROM created) AS created`,
      values,
    );
    return Number(result.rows[0]?.created) === 1;
  }

  async get<T = unknown>(key: string): Promise<T | undefined> {
    checkKey(key);
    const result = await this.query<{ doc: unknown; arrays: Buffer | null }>(
      `SELECT doc, arrays FROM ${tableOf(key)} WHERE key = $1`,
      [key],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : (unpackRecord(row.doc, row.arrays) as T);
  }

  async list(prefix: string): Promise<string[]> {
    const parts = prefix.split('/').filter(Boolean);
    const like = parts.length === 0 ? '%' : `${escapeLike(parts.join('/'))}/%`;
    const first = parts[0];
    // A prefix naming one of the tables is looked up there alone; others may be anywhere in `records`.
    const tables =
      first === undefined
        ? ALL_TABLES
        : [(TABLES as readonly string[]).includes(first) ? first : OTHER_TABLE];
    const keys: string[] = [];
    for (const table of tables) {
      const result = await this.query<{ key: string }>(`SELECT key FROM ${table} WHERE key LIKE $1`, [like]);
      for (const row of result.rows) keys.push(row.key);
    }
    return keys.sort();
  }

  async delete(key: string): Promise<void> {
    checkKey(key);
    await this.query(`DELETE FROM ${tableOf(key)} WHERE key = $1`, [key]);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

interface OutboxRow {
  seq: string;
  id: string;
  session_id: string;
  message: unknown;
  workflow: unknown;
  created_at: string;
}

/** The outbox in PostgreSQL: per-session leases, so several relays share the work and keep each session's order. */
export class PostgresOutbox implements Outbox {
  private claims = 0;

  constructor(private readonly query: Query) {}

  async enqueue(entry: OutboxEntry): Promise<void> {
    await this.query(
      `INSERT INTO outbox (id, session_id, message, workflow, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (id) DO NOTHING`,
      entryValues(entry),
    );
  }

  async claim(holder: string, leaseMs: number, limit: ClaimLimit): Promise<Claim> {
    // The holder's own leases are renewed whatever the limit; then sessions with entries whose lease is free or
    // ran out (and whose oldest entry was written before the cutoff, where there is one), oldest first. One statement whose conflict clause checks the lease again under the row's lock,
    // so of two relays racing for a session exactly one gets it. Rows are leased in session order, which keeps
    // two claims from deadlocking on each other's rows.
    const leased = await this.query<{ session_id: string }>(
      `WITH candidates AS (
         SELECT session_id FROM outbox_leases WHERE holder = $1
         UNION
         (SELECT o.session_id
          FROM outbox o LEFT JOIN outbox_leases l ON l.session_id = o.session_id
          WHERE l.session_id IS NULL OR l.expires_at <= now()
          GROUP BY o.session_id
          HAVING $4::bigint IS NULL OR min(o.created_at) < $4::bigint
          ORDER BY min(o.seq)
          LIMIT $3)
       )
       INSERT INTO outbox_leases (session_id, holder, expires_at)
       SELECT session_id, $1, now() + $2 * interval '1 millisecond' FROM candidates ORDER BY session_id
       ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE outbox_leases.expires_at <= now() OR outbox_leases.holder = EXCLUDED.holder
       RETURNING session_id`,
      [holder, leaseMs, limit.sessions, limit.writtenBefore ?? null],
    );
    const sessions = leased.rows.map((row) => row.session_id);
    // Now and then, the leases of sessions that have nothing left and whose holder went away.
    if (++this.claims % 200 === 0)
      await this.query("DELETE FROM outbox_leases WHERE expires_at < now() - interval '1 minute'");
    if (sessions.length === 0) return { entries: [], sessions };
    const result = await this.query<OutboxRow>(
      `SELECT seq, id, session_id, message, workflow, created_at FROM outbox
       WHERE session_id = ANY($1::text[]) ORDER BY seq LIMIT $2`,
      [sessions, limit.entries],
    );
    const entries: OutboxEntry[] = [];
    for (const row of result.rows) {
      const entry = parseOutboxEntry(
        {
          id: row.id,
          sessionId: row.session_id,
          message: row.message,
          workflow: row.workflow,
          createdAt: Number(row.created_at),
        },
        row.seq,
      );
      if (entry) entries.push(entry); // else not written by this code: left for a person to look at
    }
    return { entries, sessions };
  }

  async remove(entries: readonly OutboxEntry[]): Promise<void> {
    const seqs = entries.flatMap((entry) => (entry.position ? [entry.position] : []));
    if (seqs.length > 0) await this.query('DELETE FROM outbox WHERE seq = ANY($1::bigint[])', [seqs]);
  }

  async release(holder: string, sessionIds?: readonly string[]): Promise<void> {
    if (sessionIds === undefined) await this.query('DELETE FROM outbox_leases WHERE holder = $1', [holder]);
    else if (sessionIds.length > 0)
      await this.query('DELETE FROM outbox_leases WHERE holder = $1 AND session_id = ANY($2::text[])', [
        holder,
        sessionIds,
      ]);
  }

  async stats(): Promise<OutboxStats> {
    const result = await this.query<{ depth: string; oldest: string | null }>(
      'SELECT count(*) AS depth, min(created_at) AS oldest FROM outbox',
    );
    const row = result.rows[0];
    return {
      depth: Number(row?.depth ?? 0),
      oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
    };
  }
}

/** An entry's columns after `id`'s position: id, session_id, message, workflow, created_at. */
function entryValues(entry: OutboxEntry): unknown[] {
  return [
    entry.id,
    entry.sessionId,
    JSON.stringify(entry.message),
    JSON.stringify(entry.workflow),
    entry.createdAt,
  ];
}

function checkKey(key: string): void {
  if (key.split('/').some((part) => part === '' || part === '.' || part === '..'))
    throw new Error(`invalid store key: ${key}`);
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
