import { readFile } from 'node:fs/promises';

/** The OS user and group the server's programs run as. */
export interface ServerIdentity {
  readonly uid: number;
  readonly gid: number;
}

/** The OS user Debian's `postgresql` package creates. */
const POSTGRES_USER = 'postgres';

/**
 * Who runs `initdb` and `postgres`. Both refuse to run as root, so as root they run as the
 * `postgres` OS user; anyone else runs them as themselves.
 *
 * @returns the identity to switch to, or `undefined` to run as this process's own user.
 * @throws Error when running as root and there is no `postgres` user in /etc/passwd.
 */
export async function serverIdentity(): Promise<ServerIdentity | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const passwd = await readFile('/etc/passwd', 'utf8');
  for (const line of passwd.split('\n')) {
    // name:password:uid:gid:gecos:home:shell
    const [name, , uid, gid] = line.split(':');
    if (name === POSTGRES_USER && uid && gid) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new Error(
    `running as root, and PostgreSQL refuses to run as root; there is no '${POSTGRES_USER}' OS user to run it as ` +
      `(apt-get install -y postgresql creates one)`,
  );
}
