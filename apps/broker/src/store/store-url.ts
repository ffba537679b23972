/**
 * A PostgreSQL store URL as log lines show it: without its password, whether the URL carries it
 * as `user:password@` or as a `password` parameter. Read as text, not with `new URL`: libpq's
 * multi-host form (`postgres://u@h1:5432,h2:5432/db?target_session_attrs=read-write`), which the
 * driver serves and setups without a floating address use, is no WHATWG URL, and parsing it threw
 * at start, before the broker had served anything.
 */
export function redactStoreUrl(url: string): string {
  const authority = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@/i.exec(url);
  let redacted = url;
  if (authority !== null) {
    const [whole = '', scheme = '', userInfo = ''] = authority;
    const separator = userInfo.indexOf(':');
    if (separator !== -1) redacted = `${scheme}${userInfo.slice(0, separator)}@${url.slice(whole.length)}`;
  }
  return redacted.replace(/([?&]password=)[^&#]*/gi, '$1');
}
