// The CORS preflight the Temporal UI sends before it posts payloads to a codec server's /decode.

/** The origin the codec server at `codecUrl` allows for a UI page at `origin` (null: refused). */
export async function codecPreflightOrigin(codecUrl: string, origin: string): Promise<string | null> {
  const preflight = await fetch(`${codecUrl}/decode`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,x-namespace',
    },
  });
  return preflight.headers.get('access-control-allow-origin');
}
