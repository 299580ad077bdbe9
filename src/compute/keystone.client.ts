/** Keystone v3: a service token from service credentials, and validation of user tokens. */

export interface KeystoneConfig {
  url: string;
  username: string;
  password: string;
  project: string;
  domain: string;
}

export interface TokenInfo {
  userId: string;
  projectId: string;
  roles: string[];
  expiresAt: Date;
}

interface CatalogEntry {
  type: string;
  endpoints: { interface: string; url: string }[];
}

interface TokenBody {
  token: {
    expires_at: string;
    user: { id: string };
    project?: { id: string };
    roles?: { name: string }[];
    catalog?: CatalogEntry[];
  };
}

export class KeystoneError extends Error {}

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

  /** The public endpoint of a service type from the service token's catalog. */
  async endpoint(type: string): Promise<string> {
    const entry = (await this.session()).catalog.find((c) => c.type === type);
    const url =
      entry?.endpoints.find((e) => e.interface === 'public')?.url ?? entry?.endpoints[0]?.url;
    if (url === undefined) throw new KeystoneError(`No ${type} endpoint in the Keystone catalog`);
    return url.replace(/\/$/, '');
  }

  /** Validates a user's token; null when Keystone says it is not valid. */
  async validate(userToken: string): Promise<TokenInfo | null> {
    const res = await fetch(`${this.config.url}/auth/tokens?nocatalog`, {
      headers: { 'X-Auth-Token': await this.serviceToken(), 'X-Subject-Token': userToken },
    });
    if (res.status === 404 || res.status === 401) return null;
    if (!res.ok) throw new KeystoneError(`Keystone answered ${res.status} validating a token`);
    const { token } = (await res.json()) as TokenBody;
    if (token.project === undefined) return null;
    return {
      userId: token.user.id,
      projectId: token.project.id,
      roles: (token.roles ?? []).map((r) => r.name),
      expiresAt: new Date(token.expires_at),
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
    const res = await fetch(`${this.config.url}/OS-TRUST/trusts`, {
      method: 'POST',
      headers: { 'X-Auth-Token': userToken, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        trust: {
          trustor_user_id: caller.userId,
          trustee_user_id: (await this.session()).userId,
          project_id: caller.projectId,
          impersonation: true,
          roles: caller.roles.map((name) => ({ name })),
        },
      }),
    });
    if (!res.ok) throw new KeystoneError(`Keystone refused a trust (${res.status})`);
    return ((await res.json()) as { trust: { id: string } }).trust.id;
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
    const res = await fetch(`${this.config.url}/OS-TRUST/trusts/${encodeURIComponent(trustId)}`, {
      method: 'DELETE',
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
    const { url, username, password, domain } = this.config;
    const res = await fetch(`${url}/auth/tokens`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ['password'],
            password: { user: { name: username, domain: { name: domain }, password } },
          },
          scope,
        },
      }),
    });
    const token = res.headers.get('x-subject-token');
    if (!res.ok || token === null) {
      throw new KeystoneError(
        `Keystone refused the service credentials of ${username} (${res.status})`,
      );
    }
    const body = (await res.json()) as TokenBody;
    return {
      token,
      userId: body.token.user.id,
      expiresAt: new Date(body.token.expires_at),
      catalog: body.token.catalog ?? [],
    };
  }
}

function fresh(session: Session): boolean {
  return session.expiresAt.getTime() - Date.now() > 60_000;
}
