import { useState } from 'preact/hooks';
import { logIn } from '../auth';

/** Shown when the broker answers 401: a token, kept for this tab only (sessionStorage). */
export function LoginPage(props: { hadToken: boolean }) {
  const [token, setToken] = useState('');
  return (
    <section class="login">
      <h1>Sign in</h1>
      <p>
        {props.hadToken
          ? 'The broker refused this token. Enter another one.'
          : 'This broker requires a token for its admin API.'}{' '}
        Ask its operator for one with admin read (or write) permission; <code>ricochet-broker token</code>{' '}
        makes one.
      </p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (token.trim()) logIn(token.trim());
        }}
      >
        <label>
          Token{' '}
          <input
            type="password"
            name="token"
            autoComplete="off"
            value={token}
            onInput={(event) => setToken(event.currentTarget.value)}
            size={48}
          />
        </label>
        <button type="submit">Sign in</button>
      </form>
      <p class="muted">
        The token is kept in this browser tab only and sent as <code>Authorization: Bearer …</code>.
      </p>
    </section>
  );
}
