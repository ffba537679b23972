import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago. PostgreSQL cannot listen on port 0 and tell
 * us the port it got, so we let the kernel pick one, close it, and hand it on. Another process may
 * take it in between: the caller retries with a new port when the server cannot bind.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error(`unexpected address ${address}`);
  return address.port;
}
