/** Keystone v3: a service token from service credentials, and validation of user tokens. */
import { ClimateError } from '../common/errors.js';

/** How long one Keystone call may take when KEYSTONE_TIMEOUT_MS does not say. */
export const KEYSTONE_TIMEOUT_MS = 10_000;

export interface KeystoneConfig {
  url: string;
  username: string;
  password: string;
  project: string;
  domain: string;
  /** Longest one call (answer and body) may take; KEYSTONE_TIMEOUT_MS by default. */
  timeoutMs?: number;
  /** The catalog endpoints `endpoint` picks (KEYSTONE_INTERFACE); `internal` by default, as Blazar's. */
  interface?: 'internal' | 'public' | 'admin';
  /** Their region (KEYSTONE_REGION); unset: any. */
  region?: string | null;
}

export interface TokenInfo {
  userId: string;
  projectId: string;
  roles: string[];
  expiresAt: Date;
  /** An application credential's access rules: the services it may be used at. */
  accessRules: { service?: string }[] | null;
}

interface CatalogEntry {
  type: string;
  endpoints: {
    interface: string;
    url: string;
    region?: string | null;
    region_id?: string | null;
  }[];
}

interface TokenBody {
  token: {
    expires_at: string;
    user: { id: string };
    project?: { id: string };
    roles?: { name: string }[];
    catalog?: CatalogEntry[];
    application_credential?: { access_rules?: { service?: string }[] };
  };
}

/**
 * Keystone failed: it answered wrongly (502), could not be reached (503) or did not
 * answer in time (504). Rendered with Blazar's body like every ClimateError.
 */
export class KeystoneError extends ClimateError {
  constructor(message: string, status = 502, options?: { cause?: unknown }) {
    super(status, 'IdentityServiceError', message, options);
  }
}

interface Answer {
  status: number;
  ok: boolean;
  headers: Headers;
  /** The parsed JSON body; a KeystoneError (502) when `ok` and it is not JSON. */
  json<T>(): T;
}

interface Session {
  token: string;
  userId: string;
  expiresAt: Date;
  catalog: CatalogEntry[];
}

/** Renews the service token, and tokens of trusts, a minute before they expire. */
export class KeystoneClient {
  private service: Session | null = null;
  private readonly trusts = new Map<string, Session>();

  constructor(private readonly config: KeystoneConfig) {}

  async serviceToken(): Promise<string> {
    return (await this.session()).token;
  }

  /**
   * The endpoint of a service type in the service token's catalog, of the configured
   * interface (and region, when one is set), as Blazar picks it (endpoint_type,
   * os_region_name).
   */
  async endpoint(type: string): Promise<string> {
    const wanted = this.config.interface ?? 'internal';
    const region = this.config.region ?? null;
    const entry = (await this.session()).catalog.find((c) => c.type === type);
    const url = entry?.endpoints.find(
      (e) => e.interface === wanted && (region === null || (e.region_id ?? e.region) === region),
    )?.url;
    if (url === undefined) {
      const where = region === null ? '' : ` in region ${region}`;
      throw new KeystoneError(
        `No ${wanted} ${type} endpoint${where} in the Keystone catalog (KEYSTONE_INTERFACE, KEYSTONE_REGION)`,
      );
    }
    return url.replace(/\/$/, '');
  }

  /** Validates a user's token; null when Keystone says it is not valid. */
  async validate(userToken: string): Promise<TokenInfo | null> {
    const res = await this.call('GET', '/auth/tokens?nocatalog', {
      headers: { 'X-Auth-Token': await this.serviceToken(), 'X-Subject-Token': userToken },
    });
    if (res.status === 404 || res.status === 401) return null;
    if (!res.ok) throw new KeystoneError(`Keystone answered ${res.status} validating a token`);
    const token = tokenOf(res, 'validating a token');
    if (token.project === undefined) return null;
    return {
      userId: token.user.id,
      projectId: token.project.id,
      roles: (token.roles ?? []).map((r) => r.name),
      expiresAt: new Date(token.expires_at),
      accessRules: token.application_credential?.access_rules ?? null,
    };
  }

  /**
   * A trust from the caller to Climate's service user in the caller's project, with the
   * caller's roles, so that Climate can later act as the caller (impersonation).
   */
  async createTrust(
    userToken: string,
    caller: { userId: string; projectId: string; roles: string[] },
  ): Promise<string> {
    const trusteeUserId = (await this.session()).userId;
    const res = await this.call('POST', '/OS-TRUST/trusts', {
      headers: { 'X-Auth-Token': userToken },
      body: {
        trust: {
          trustor_user_id: caller.userId,
          trustee_user_id: trusteeUserId,
          project_id: caller.projectId,
          impersonation: true,
          roles: caller.roles.map((name) => ({ name })),
        },
      },
    });
    if (!res.ok) throw new KeystoneError(`Keystone refused a trust (${res.status})`);
    return res.json<{ trust: { id: string } }>().trust.id;
  }

  /** A token of the trustor, in the trust's project. */
  async trustToken(trustId: string): Promise<string> {
    const cached = this.trusts.get(trustId);
    if (cached !== undefined && fresh(cached)) return cached.token;
    const session = await this.authenticate({ 'OS-TRUST:trust': { id: trustId } });
    if (this.trusts.size > 1000) this.trusts.clear();
    this.trusts.set(trustId, session);
    return session.token;
  }

  /** Removes a trust; one that is gone already is fine. */
  async deleteTrust(trustId: string): Promise<void> {
    this.trusts.delete(trustId);
    const res = await this.call('DELETE', `/OS-TRUST/trusts/${encodeURIComponent(trustId)}`, {
      headers: { 'X-Auth-Token': await this.serviceToken() },
    });
    if (!res.ok && res.status !== 404) {
      throw new KeystoneError(`Keystone refused to delete trust ${trustId} (${res.status})`);
    }
  }

  private async session(): Promise<Session> {
    if (this.service !== null && fresh(this.service)) return this.service;
    const { project, domain } = this.config;
    this.service = await this.authenticate({
      project: { name: project, domain: { name: domain } },
    });
    return this.service;
  }

  /** Climate's service credentials, scoped as asked. */
  private async authenticate(scope: Record<string, unknown>): Promise<Session> {
    const { username, password, domain } = this.config;
    const res = await this.call('POST', '/auth/tokens', {
      body: {
        auth: {
          identity: {
            methods: ['password'],
            password: { user: { name: username, domain: { name: domain }, password } },
          },
          scope,
        },
      },
    });
    const token = res.headers.get('x-subject-token');
    if (!res.ok || token === null) {
      throw new KeystoneError(
        `Keystone refused the service credentials of ${username} (${res.status})`,
      );
    }
    const body = tokenOf(res, `authenticating ${username}`);
    return {
      token,
      userId: body.user.id,
      expiresAt: new Date(body.expires_at),
      catalog: body.catalog ?? [],
    };
  }

  /**
   * One call, answer and body within the timeout. A timeout is a KeystoneError 504, a
   * connection that fails a 503; the caller judges the status.
   */
  private async call(
    method: string,
    path: string,
    options: { headers?: Record<string, string>; body?: unknown },
  ): Promise<Answer> {
    const timeoutMs = this.config.timeoutMs ?? KEYSTONE_TIMEOUT_MS;
    const url = `${this.config.url}${path}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method,
        headers: {
          Accept: 'application/json',
          ...(options.body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...options.headers,
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await res.text();
    } catch (error) {
      const endpoint = `${method} ${url.replace(/\?.*$/, '')}`;
      // Duck-typed: the DOMException may come from another realm (Node's own, under jest).
      if ((error as { name?: unknown } | null)?.name === 'TimeoutError') {
        throw new KeystoneError(`Keystone did not answer ${endpoint} in ${timeoutMs} ms`, 504, {
          cause: error,
        });
      }
      throw new KeystoneError(`Keystone cannot be reached (${endpoint}): ${reason(error)}`, 503, {
        cause: error,
      });
    }
    return {
      status: res.status,
      ok: res.ok,
      headers: res.headers,
      json: <T>() => {
        try {
          return JSON.parse(text) as T;
        } catch (error) {
          throw new KeystoneError(`Keystone answered ${method} ${path} with no JSON`, 502, {
            cause: error,
          });
        }
      },
    };
  }
}

/** The token in an answer; a KeystoneError (502) when the answer has none. */
function tokenOf(res: Answer, doing: string): TokenBody['token'] {
  const token = res.json<Partial<TokenBody>>().token;
  if (typeof token?.user?.id !== 'string' || typeof token.expires_at !== 'string') {
    throw new KeystoneError(`Keystone answered ${res.status} ${doing}, with no token in it`);
  }
  return token;
}

/** The innermost reason of a failed fetch (ECONNREFUSED, …). */
function reason(error: unknown): string {
  const outer = error as { message?: unknown; cause?: { message?: unknown } } | null;
  const message = outer?.cause?.message ?? outer?.message;
  return typeof message === 'string' ? message : String(error);
}

function fresh(session: Session): boolean {
  return session.expiresAt.getTime() - Date.now() > 60_000;
}
