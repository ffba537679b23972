import type { GroupConfig } from '@ricochet/core';
import type { GroupView } from '@ricochet/protocol';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, segment } from '../api';

/**
 * The group's config as JSON, editable. Saving PUTs it as written; the broker validates it, and
 * what it refuses is shown here, path by path, with the stored config left as it was.
 */
export function ConfigEditor(props: {
  group: GroupView;
  readOnly: boolean;
  onSaved: (group: GroupView) => void;
  onDraft: (config: GroupConfig | undefined) => void;
}) {
  const saved = JSON.stringify(props.group.config, null, 2);
  const [text, setText] = useState(saved);
  const [error, setError] = useState<ApiError | Error | undefined>(undefined);
  const [saving, setSaving] = useState(false);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  useEffect(() => setText(saved), [saved]);

  const onInput = (value: string) => {
    setText(value);
    setNotice(undefined);
    try {
      props.onDraft(JSON.parse(value) as GroupConfig);
    } catch {
      props.onDraft(undefined);
    }
  };

  const save = async () => {
    setError(undefined);
    setNotice(undefined);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (parseError) {
      setError(
        new Error(`not JSON: ${parseError instanceof Error ? parseError.message : String(parseError)}`),
      );
      return;
    }
    setSaving(true);
    try {
      const group = await api<GroupView>('PUT', `/v1/groups/${segment(props.group.name)}`, body);
      props.onSaved(group);
      props.onDraft(undefined);
      setNotice('Saved.');
    } catch (failure) {
      setError(failure instanceof Error ? failure : new Error(String(failure)));
    } finally {
      setSaving(false);
    }
  };

  return (
    <div class="editor">
      <textarea
        aria-label="group config"
        name="config"
        rows={Math.min(20, text.split('\n').length + 1)}
        spellcheck={false}
        value={text}
        readOnly={props.readOnly}
        onInput={(event) => onInput(event.currentTarget.value)}
      />
      <div class="actions">
        {props.readOnly ? (
          <span class="muted">Read-only: your token may not change groups.</span>
        ) : (
          <>
            <button type="button" onClick={save} disabled={saving || text === saved}>
              Save
            </button>
            <button type="button" onClick={() => onInput(saved)} disabled={text === saved}>
              Revert
            </button>
          </>
        )}
        {notice ? <span class="ok">{notice}</span> : null}
      </div>
      {error ? (
        <div class="error" role="alert" data-testid="config-error">
          <p>{error.message}</p>
          {error instanceof ApiError && error.issues.length > 0 ? (
            <ul>
              {error.issues.map((issue) => (
                <li key={`${issue.path.join('.')}:${issue.message}`}>
                  <code>{issue.path.join('.') || '(body)'}</code>: {issue.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
