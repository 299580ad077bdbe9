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

/** Renews the service token a minute before it expires. */
export class KeystoneClient {
  private service: { token: string; expiresAt: Date; catalog: CatalogEntry[] } | null = null;

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

  private async session(): Promise<{ token: string; expiresAt: Date; catalog: CatalogEntry[] }> {
    if (this.service !== null && this.service.expiresAt.getTime() - Date.now() > 60_000)
      return this.service;
    const { url, username, password, project, domain } = this.config;
    const res = await fetch(`${url}/auth/tokens`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ['password'],
            password: { user: { name: username, domain: { name: domain }, password } },
          },
          scope: { project: { name: project, domain: { name: domain } } },
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
    this.service = {
      token,
      expiresAt: new Date(body.token.expires_at),
      catalog: body.token.catalog ?? [],
    };
    return this.service;
  }
}
