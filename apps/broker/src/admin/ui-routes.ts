import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** Vite names what it emits under `assets/` after a hash of its content: cache those for good. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The bundle talks only to this broker and loads nothing from elsewhere; inline styles are the
 * charts' (set through the DOM, which `style-src 'self'` allows).
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * Where the dashboard's bundle is: `dist/ui` beside the published broker's code (its build copies
 * it there), else the dashboard package's own `dist` in this repository (running from source).
 */
export function defaultUiDir(): string | undefined {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const candidates = [resolve(here, '../ui'), resolve(here, '../../../dashboard/dist')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html')));
}

/**
 * The dashboard at `/ui`: the static files of its bundle with their content types and caching
 * (`index.html` revalidated every time, hashed assets immutable). Without a bundle (a checkout
 * that has not built it) `/ui` answers 404 with a page saying how to build it; the broker itself
 * runs the same either way.
 */
export function registerUiRoutes(app: FastifyInstance, dir: string | undefined): void {
  const root = dir === undefined ? undefined : resolve(dir);
  app.get('/ui', async (_request, reply) => reply.redirect('/ui/'));
  app.get<{ Params: { '*': string } }>('/ui/*', async (request, reply) => {
    if (root === undefined || !existsSync(join(root, 'index.html'))) return replyNoBundle(reply);
    const wanted = request.params['*'] || 'index.html';
    const file = resolve(root, wanted);
    if (!file.startsWith(root + sep)) return reply.code(404).type('text/plain').send('not found');
    const body = await readFile(file).catch(() => undefined);
    if (body === undefined) {
      // A path without an extension is a page of the app: its index.html routes it.
      if (extname(wanted) !== '') return reply.code(404).type('text/plain').send('not found');
      return sendFile(reply, join(root, 'index.html'), await readFile(join(root, 'index.html')));
    }
    return sendFile(reply, file, body);
  });
}

function sendFile(reply: FastifyReply, file: string, body: Buffer): FastifyReply {
  const isAsset = file.includes(`${sep}assets${sep}`);
  return reply
    .header('cache-control', isAsset ? IMMUTABLE : 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .type(CONTENT_TYPES[extname(file)] ?? 'application/octet-stream')
    .send(body);
}

function replyNoBundle(reply: FastifyReply): FastifyReply {
  return reply
    .code(404)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Ricochet dashboard not built</title></head>
<body style="font-family: sans-serif; max-width: 40rem; margin: 3rem auto; line-height: 1.5">
<h1>The dashboard is not built</h1>
<p>This broker serves the dashboard from its build output, and there is none here. In a clone of the
Ricochet repository, build it and reload this page:</p>
<pre>pnpm --filter @ricochet/dashboard build</pre>
<p>(<code>pnpm build</code> builds it along with everything else; the published <code>@ricochet/broker</code>
package ships it.) The admin API under <code>/v1/</code> works without it. To turn <code>/ui</code> off,
start the broker with <code>--no-ui</code> or <code>RICOCHET_UI=false</code>.</p>
</body></html>
`);
}
