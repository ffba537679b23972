/** PUT a config on a broker's admin API, from its ws:// endpoint; throws on anything but 2xx. */
async function put(endpoint: string, path: string, config: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${endpoint.replace(/^ws/, 'http')}${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(config),
  });
  if (!response.ok) throw new Error(`PUT ${path}: ${response.status} ${await response.text()}`);
}

/** PUT a group's config on a broker, from its ws:// endpoint. */
export async function putGroup(
  endpoint: string,
  group: string,
  config: Record<string, unknown>,
): Promise<void> {
  await put(endpoint, `/v1/groups/${group}`, config);
}

/** PUT a topic's config on a broker, from its ws:// endpoint. */
export async function putTopic(
  endpoint: string,
  topic: string,
  config: Record<string, unknown>,
): Promise<void> {
  await put(endpoint, `/v1/topics/${topic}`, config);
}

/** GET a group's stats. */
export async function groupStats(endpoint: string, group: string): Promise<Record<string, number>> {
  const response = await fetch(`${endpoint.replace(/^ws/, 'http')}/v1/groups/${group}`);
  return ((await response.json()) as { stats: Record<string, number> }).stats;
}
