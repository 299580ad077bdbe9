/** HTTP webhooks for the lease notifications (docs/notifications.md); no URLs is off. */
export interface WebhookSettings {
  urls: string[];
  secret: string;
  timeoutMs: number;
}

/** Shorter secrets are refused: they can be guessed from signed bodies. */
export const MIN_SECRET_LENGTH = 16;

/** Each URL http(s), without credentials, once; a secret whenever there is a URL. */
export function checkWebhooks(settings: WebhookSettings, problems: string[]): void {
  const seen = new Set<string>();
  for (const url of settings.urls) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(url);
    } catch {
      // reported below
    }
    if (parsed === null || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      problems.push(`WEBHOOK_URLS: ${url} is not an http:// or https:// URL`);
    } else if (parsed.username !== '' || parsed.password !== '') {
      problems.push(
        `WEBHOOK_URLS: ${receiverName(url)} carries a user or password; receivers check ` +
          'the X-Climate-Signature header instead',
      );
    } else if (seen.has(parsed.href)) {
      problems.push(`WEBHOOK_URLS: ${url} is listed twice`);
    }
    if (parsed !== null) seen.add(parsed.href);
  }
  if (settings.urls.length > 0 && settings.secret === '') {
    problems.push(
      'WEBHOOK_SECRET: required when WEBHOOK_URLS is set (receivers check the signature ' +
        'of each delivery with it)',
    );
  } else if (settings.urls.length > 0 && settings.secret.length < MIN_SECRET_LENGTH) {
    problems.push(`WEBHOOK_SECRET: must be at least ${MIN_SECRET_LENGTH} characters long`);
  }
}

/**
 * A receiver as logs show it: scheme, host and port only, since a path or query often
 * carries a token (and a user or password would be a secret too).
 */
export function receiverName(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(not a URL)';
  }
}
