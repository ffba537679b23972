/** PUT a group's config on a broker, from its ws:// endpoint. */
export async function putGroup(
  endpoint: string,
  group: string,
  config: Record<string, unknown>,
): Promise<void> {
  const response = await fetch(`${endpoint.replace(/^ws/, 'http')}/v1/groups/${group}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(config),
  });
  if (!response.ok) throw new Error(`PUT group ${group}: ${response.status} ${await response.text()}`);
}

/** GET a group's stats. */
export async function groupStats(endpoint: string, group: string): Promise<Record<string, number>> {
  const response = await fetch(`${endpoint.replace(/^ws/, 'http')}/v1/groups/${group}`);
  return ((await response.json()) as { stats: Record<string, number> }).stats;
}
