/**
 * What the dashboard knows about its access: the token the user entered (kept for this browser tab
 * only, in sessionStorage), whether the broker asked for one, and whether it refused a write. The
 * broker decides; this only remembers its last answer so the UI can show a login or hide writes.
 */
const TOKEN_KEY = 'ricochet.token';

export interface AccessState {
  readonly token: string | undefined;
  /** The broker answered 401: show the token login. */
  readonly loginRequired: boolean;
  /** The broker answered a write with 403: this principal may only read. */
  readonly readOnly: boolean;
}

type Listener = (state: AccessState) => void;

let state: AccessState = {
  token: readStoredToken(),
  loginRequired: false,
  readOnly: false,
};
const listeners = new Set<Listener>();

function readStoredToken(): string | undefined {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

function update(next: Partial<AccessState>): void {
  state = { ...state, ...next };
  for (const listener of [...listeners]) listener(state);
}

export function accessState(): AccessState {
  return state;
}

export function onAccessChange(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Keep a token for this tab and try again with it. */
export function logIn(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
  update({ token, loginRequired: false, readOnly: false });
}

export function logOut(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  update({ token: undefined, loginRequired: false, readOnly: false });
}

export function requireLogin(): void {
  if (!state.loginRequired) update({ loginRequired: true });
}

export function markReadOnly(): void {
  if (!state.readOnly) update({ readOnly: true });
}
