import { useEffect, useState } from 'preact/hooks';

/** The pages of the dashboard, addressed by the URL's hash so the broker serves one file. */
export type Route =
  | { readonly page: 'overview' }
  | { readonly page: 'group'; readonly group: string }
  | { readonly page: 'message'; readonly messageId: string };

export function parseRoute(hash: string): Route {
  const [, page, name] = hash.replace(/^#/, '').split('/');
  if (page === 'groups' && name) return { page: 'group', group: decodeURIComponent(name) };
  if (page === 'messages' && name) return { page: 'message', messageId: decodeURIComponent(name) };
  return { page: 'overview' };
}

export const overviewHref = '#/';
export const groupHref = (group: string) => `#/groups/${encodeURIComponent(group)}`;
export const messageHref = (messageId: string) => `#/messages/${encodeURIComponent(messageId)}`;

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
