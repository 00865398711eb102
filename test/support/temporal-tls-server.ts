// A secured Temporal server for tests: the real server (go.temporal.io/server, as production runs it; the
// Temporal CLI's dev server takes no TLS options) on in-memory SQLite, its frontend serving TLS with a
// certificate from a CA made here, requiring client certificates from a second CA (mTLS), and authorising
// every call by a bearer API key: a JWT signed with a key made here and checked by the server's own JWT claim
// mapper and authorizer (the JWKS is a file). The system worker reaches the server through an internal
// frontend, as Temporal recommends when an authorizer is on.
//
// The server binary is the one scripts/temporal-server.sh builds from the Go module proxy into
// build/temporal-server/<version>/bin (minutes on a new machine; TEMPORAL_SERVER_BIN points at another build).

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { openSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { stringify } from 'yaml';
import { killOnExit } from './cli-process.js';
import { ensureTemporalServerBuilt, freePortRange } from './temporal-cluster.js';

const run = promisify(execFile);
const SERVER_BINARY = fileURLToPath(
  new URL('../../build/temporal-server/1.32.2/bin/temporal-server', import.meta.url),
);

export interface TlsTemporalServer {
  /** `127.0.0.1:<port>`: the TLS frontend. */
  address: string;
  namespace: string;
  dir: string;
  /** PEM files: the CA that signed the server's certificate, and a client certificate the server accepts. */
  serverCaPath: string;
  clientCertPath: string;
  clientKeyPath: string;
  /** The name in the server's certificate. */
  serverName: string;
  /** A bearer API key (a signed JWT) with these permissions, e.g. `default:write`, `temporal-system:admin` (roles: read, write, worker, admin). */
  apiKey(permissions: string[]): string;
  /** What the server printed, for failure messages. */
  log(): Promise<string>;
  stop(): Promise<void>;
}

/** The server binary: scripts/temporal-server.sh builds it into build/ when it is not there yet. */
export async function temporalServerBinary(): Promise<string> {
  if (process.env.TEMPORAL_SERVER_BIN) return process.env.TEMPORAL_SERVER_BIN;
  await ensureTemporalServerBuilt();
  return SERVER_BINARY;
}

async function openssl(dir: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir });
}

/** A CA, and a P-256 key with a certificate it signs for `usage` (serverAuth or clientAuth). */
async function makeCertificates(dir: string): Promise<void> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['server-ca', 'client-ca'])
    await openssl(
      dir,
      'req',
      '-x509',
      ...ec,
      '-keyout',
      `${ca}.key`,
      '-out',
      `${ca}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=openclaw test ${ca}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
  const leaf = async (name: string, ca: string, subject: string, extensions: string) => {
    await writeFile(join(dir, `${name}.ext`), extensions);
    await openssl(dir, 'req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    await openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.pem`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  await leaf(
    'server',
    'server-ca',
    '/CN=localhost',
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n',
  );
  await leaf(
    'client',
    'client-ca',
    '/CN=openclaw-worker',
    'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n',
  );
}

function base64url(value: string | Buffer): string {
  return Buffer.from(value).toString('base64url');
}

function serverConfig(dir: string, base: number): Record<string, unknown> {
  const sqlite = {
    sql: {
      pluginName: 'sqlite',
      databaseName: 'default',
      connectAddr: 'localhost',
      connectProtocol: 'tcp',
      connectAttributes: { mode: 'memory', cache: 'private' },
      maxConns: 1,
      maxIdleConns: 1,
      maxConnLifetime: '1h',
    },
  };
  const service = (offset: number) => ({
    rpc: { grpcPort: base + offset, membershipPort: base + offset + 1, bindOnIP: '127.0.0.1' },
  });
  return {
    log: { stdout: true, level: process.env.TEMPORAL_TLS_LOG_LEVEL ?? 'warn' },
    persistence: {
      defaultStore: 'sqlite-default',
      visibilityStore: 'sqlite-visibility',
      numHistoryShards: 1,
      datastores: { 'sqlite-default': sqlite, 'sqlite-visibility': sqlite },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      tls: {
        frontend: {
          server: {
            certFile: join(dir, 'server.pem'),
            keyFile: join(dir, 'server.key'),
            clientCaFiles: [join(dir, 'client-ca.pem')],
            requireClientAuth: true,
          },
        },
      },
      authorization: {
        jwtKeyProvider: { keySourceURIs: [`file://${join(dir, 'jwks.json')}`], refreshInterval: '1m' },
        permissionsClaimName: 'permissions',
        authorizer: 'default',
        claimMapper: 'default',
      },
    },
    services: {
      frontend: service(0),
      'internal-frontend': service(2),
      history: service(4),
      matching: service(6),
      worker: service(8),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${base}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
  };
}

export async function startTlsTemporalServer(namespace = 'default'): Promise<TlsTemporalServer> {
  const binary = await temporalServerBinary();
  const dir = await mkdtemp(join(tmpdir(), 'temporal-tls-'));
  await makeCertificates(dir);
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = 'openclaw-test';
  const jwk = publicKey.export({ format: 'jwk' });
  await writeFile(
    join(dir, 'jwks.json'),
    JSON.stringify({ keys: [{ ...jwk, kid, alg: 'RS256', use: 'sig' }] }),
  );
  const apiKey = (permissions: string[]) => {
    const now = Math.floor(Date.now() / 1000);
    const head = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid }));
    const body = base64url(JSON.stringify({ sub: 'openclaw-test', permissions, iat: now, exp: now + 3600 }));
    return `${head}.${body}.${base64url(sign('sha256', Buffer.from(`${head}.${body}`), privateKey))}`;
  };

  const base = await freePortRange(10);
  const configFile = join(dir, 'temporal.yaml');
  await writeFile(configFile, stringify(serverConfig(dir, base)));
  const logFile = join(dir, 'server.log');
  const out = openSync(logFile, 'a');
  const child: ChildProcess = spawn(
    binary,
    [
      '--config-file',
      configFile,
      'start',
      ...['frontend', 'internal-frontend', 'history', 'matching', 'worker'].flatMap((s) => ['--service', s]),
    ],
    { stdio: ['ignore', out, out] },
  );
  killOnExit(child);
  const log = () => readFile(logFile, 'utf8').catch(() => '');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };

  const server: TlsTemporalServer = {
    address: `127.0.0.1:${base}`,
    namespace,
    dir,
    serverCaPath: join(dir, 'server-ca.pem'),
    clientCertPath: join(dir, 'client.pem'),
    clientKeyPath: join(dir, 'client.key'),
    serverName: 'localhost',
    apiKey,
    log,
    stop,
  };
  try {
    await registerNamespace(server, child);
  } catch (error) {
    const printed = await log();
    await stop();
    throw new Error(`${(error as Error).message}\nserver log:\n${printed.slice(-4000)}`);
  }
  return server;
}

/** Waits for the frontend, registers the namespace as a system admin, and waits until it is usable. */
async function registerNamespace(server: TlsTemporalServer, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 120_000;
  let lastError = '';
  const alive = () => {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the Temporal server exited (code ${child.exitCode}, signal ${child.signalCode})`);
    if (Date.now() > deadline)
      throw new Error(`the TLS Temporal server did not become ready within 120 s (${lastError})`);
  };
  const tls = {
    serverNameOverride: server.serverName,
    serverRootCACertificate: await readFile(server.serverCaPath),
    clientCertPair: { crt: await readFile(server.clientCertPath), key: await readFile(server.clientKeyPath) },
  };
  let connection: Connection | undefined;
  while (!connection) {
    alive();
    connection = await Connection.connect({
      address: server.address,
      tls,
      apiKey: server.apiKey(['temporal-system:admin']),
      connectTimeout: 2_000,
    }).catch((error: Error) => {
      lastError = `connecting: ${error.message}`;
      return undefined;
    });
    if (!connection) await new Promise((r) => setTimeout(r, 500));
  }
  try {
    for (;;) {
      alive();
      try {
        await connection.workflowService.registerNamespace({
          namespace: server.namespace,
          workflowExecutionRetentionPeriod: msToTs(24 * 3600 * 1000),
        });
        break;
      } catch (error) {
        if (/already exists|AlreadyExists/i.test((error as Error).message)) break;
        lastError = `registering the namespace: ${(error as Error).message}`;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    // A new namespace reaches every service's cache a little later: wait until a list call on it works.
    for (;;) {
      alive();
      try {
        await connection.workflowService.listWorkflowExecutions({ namespace: server.namespace, pageSize: 1 });
        return;
      } catch (error) {
        lastError = `listing workflows: ${(error as Error).message}`;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection.close();
  }
}
