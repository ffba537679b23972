import { logOut } from './auth';
import { GroupPage } from './pages/group';
import { LoginPage } from './pages/login';
import { MessagePage } from './pages/message';
import { OverviewPage } from './pages/overview';
import { overviewHref, useRoute } from './router';
import { useAccess } from './use-access';

export function App() {
  const route = useRoute();
  const access = useAccess();
  return (
    <>
      <header class="top">
        <a class="brand" href={overviewHref}>
          Ricochet
        </a>
        <span class="spacer" />
        {access.readOnly ? <span class="badge">read-only</span> : null}
        {access.token ? (
          <button type="button" class="link" onClick={logOut}>
            Sign out
          </button>
        ) : null}
      </header>
      <main>
        {access.loginRequired ? (
          <LoginPage hadToken={access.token !== undefined} />
        ) : route.page === 'group' ? (
          <GroupPage key={route.group} group={route.group} />
        ) : route.page === 'message' ? (
          <MessagePage key={route.messageId} messageId={route.messageId} />
        ) : (
          <OverviewPage />
        )}
      </main>
    </>
  );
}
