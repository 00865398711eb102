// A gateway's loop at concurrency 32 handles an engine batch's answers and the clients' next requests in one long
// turn; a journaled turn that became durable meanwhile is seen at those HTTP events. If a channel's name were
// wrong, nothing would fail: the looks would just never come. So a real request through undici (as the gateway
// asks its engine) to a real HTTP server (as clients reach the gateway) must call them.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { atEventLoopPasses } from '../../store/event-loop-passes.js';

describe('atEventLoopPasses', () => {
  let server: Server;
  let url: string;

  beforeEach(async () => {
    server = createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });

  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('looks at the HTTP events of a real request, both ends in this process, and stops when told', async () => {
    let looks = 0;
    const stop = atEventLoopPasses(() => looks++);
    try {
      expect(await (await fetch(url)).json()).toEqual({ ok: true });
    } finally {
      stop();
    }
    // undici's request made, its headers and its end; the server's request and its response finished.
    expect(looks).toBeGreaterThanOrEqual(5);
    const before = looks;
    await (await fetch(url)).text();
    expect(looks).toBe(before);
  });
});
