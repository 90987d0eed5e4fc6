// A real OAuth 2.1 / OpenID Connect authorization server for the test suite: oidc-provider
// (npm, pinned in package.json) on a loopback port.
//
//   node oidc_server.mjs CONFIG.json
//
// CONFIG.json: {
//   "accounts": {"alice": {"groups": ["itil"], "email": "alice@example.test"}, ...},
//   "default_account": "alice",          // who logs in when the request names no login_hint
//   "clients": [{client_id, client_secret, grant_types, ...}],  // registered up front (RFC 7591 shape)
//   "scopes": ["mcp:read", "mcp:write"]  // scopes every resource server (any http(s) URL) offers
// }
//
// A client with "access_token_format": "opaque" gets opaque access tokens instead, for RFC 7662
// introspection (oidc-provider refuses to introspect its JWT access tokens).
//
// With "token_exchange": {"refused": ["carol"]} the token endpoint also takes RFC 8693 token
// exchange (grant_type urn:ietf:params:oauth:grant-type:token-exchange) from clients registered for
// it: the subject_token must be an access token this server signed (an RS256 JWT, checked with its
// own key), and the answer is an access token of the same subject for the one `resource` asked for
// (RFC 8707), as any resource indicator's token is. Subjects listed in "refused" get invalid_grant.
//
// It listens on 127.0.0.1 on a free port, then prints one line `ISSUER http://127.0.0.1:PORT` on
// stdout; the issuer is known only once the port is. Every resource indicator is a resource server
// whose access tokens are RS256 JWTs (RFC 9068) with `aud` = the indicator and the `groups` and
// `email` claims of the account. The interaction route logs the account named by `login_hint` (else
// the default) in and grants what the client asked for, so authorization code + PKCE completes without a browser.
// Each start makes its own signing key, so two instances are two independent issuers.
//
// Plain http on loopback needs no setting in oidc-provider 9: an http issuer is accepted, and
// native clients (the SDKs register as application_type "native") may use http loopback redirect
// URIs. Client ID Metadata Documents (features.clientIdMetadataDocument) need https client ids,
// so the SDK clients register dynamically (RFC 7591) here.

import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import { jwtVerify } from 'jose';
import Provider, { errors } from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const accounts = config.accounts ?? {};
const resourceScopes = (config.scopes ?? ['mcp:read']).join(' ');

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };
}

function isResourceUrl(value) {
  const url = URL.parse(value);
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && !url.hash;
}

function resourceServerInfo(resourceIndicator, client) {
  return {
    scope: resourceScopes,
    audience: resourceIndicator,
    // A client registered with access_token_format "opaque" gets tokens only introspection can read.
    accessTokenFormat: client?.access_token_format === 'opaque' ? 'opaque' : 'jwt',
    accessTokenTTL: 600,
    jwt: { sign: { alg: 'RS256' } },
  };
}

const server = createServer();
await new Promise((resolve) => { server.listen(0, '127.0.0.1', resolve); });
const issuer = `http://127.0.0.1:${server.address().port}`;

const key = signingKey();
const provider = new Provider(issuer, {
  clients: config.clients ?? [],
  extraClientMetadata: { properties: ['access_token_format'] },
  jwks: { keys: [key] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  scopes: ['openid', 'offline_access', ...(config.scopes ?? ['mcp:read'])],
  claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
  async findAccount(ctx, id) {
    if (!Object.hasOwn(accounts, id)) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...accounts[id] }; } };
  },
  async extraTokenClaims(ctx, token) {
    // The account's groups (and email, when it has one) ride in the access token itself, as
    // identity providers put them; the email names the user upstream (ServiceNow's JWT bearer grant).
    if (token.accountId && Object.hasOwn(accounts, token.accountId)) {
      const { groups, email } = accounts[token.accountId];
      return { groups: groups ?? [], ...(email ? { email } : {}) };
    }
    return undefined;
  },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A token request naming no resource gets the one granted at the authorization endpoint.
      async useGrantedResource() { return true; },
      async getResourceServerInfo(ctx, resourceIndicator, client) {
        if (!isResourceUrl(resourceIndicator)) throw new errors.InvalidTarget();
        return resourceServerInfo(resourceIndicator, client);
      },
    },
  },
  pkce: { required: () => true },
  ttl: { AccessToken: 600, ClientCredentials: 600, AuthorizationCode: 60, Interaction: 600, Session: 3600, Grant: 3600, IdToken: 600, RefreshToken: 3600 },
});

// Log in and consent without a person: the account comes from login_hint (else the default).
async function autoInteraction(ctx) {
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params } = details;
  if (prompt.name === 'login') {
    const accountId = params.login_hint || config.default_account;
    if (!Object.hasOwn(accounts, accountId ?? '')) {
      return provider.interactionFinished(ctx.req, ctx.res, {
        error: 'access_denied', error_description: `no test account ${JSON.stringify(accountId)}`,
      }, { mergeWithLastSubmission: false });
    }
    return provider.interactionFinished(ctx.req, ctx.res, { login: { accountId } }, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  const consent = details.grantId ? {} : { grantId };
  return provider.interactionFinished(ctx.req, ctx.res, { consent }, { mergeWithLastSubmission: true });
}

provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && /^\/interaction\/[^/]+$/u.test(ctx.path)) {
    ctx.set('cache-control', 'no-store');
    await autoInteraction(ctx);
    return;
  }
  await next();
});

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

// RFC 8693 §2.1-2.2: the subject token is checked (signed by us, not expired), then a token of the
// same account is issued for the requested resource. The client was authenticated by the endpoint.
async function tokenExchange(ctx) {
  const { client, params } = ctx.oidc;
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  if (!params.resource || Array.isArray(params.resource) || !isResourceUrl(params.resource)) {
    throw new errors.InvalidTarget('one resource (the upstream\'s URL) is required');
  }
  let payload;
  try {
    ({ payload } = await jwtVerify(params.subject_token, createPublicKey({ key, format: 'jwk' }), { issuer, algorithms: ['RS256'] }));
  } catch {
    throw new errors.InvalidGrant('subject_token is not a valid access token of this issuer');
  }
  const accountId = payload.sub;
  if (!Object.hasOwn(accounts, accountId ?? '') || (config.token_exchange.refused ?? []).includes(accountId)) {
    throw new errors.InvalidGrant(`token exchange is not permitted for subject ${JSON.stringify(accountId)}`);
  }
  const token = new provider.AccessToken({ accountId, client, gty: 'token_exchange', scope: payload.scope });
  token.resourceServer = new provider.ResourceServer(params.resource, resourceServerInfo(params.resource, client));
  const value = await token.save();
  ctx.body = {
    access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer',
    expires_in: token.expiration, scope: token.scope,
  };
}

if (config.token_exchange) {
  provider.registerGrantType(TOKEN_EXCHANGE, tokenExchange, [
    'subject_token', 'subject_token_type', 'resource', 'audience', 'requested_token_type', 'scope',
  ]);
}

server.on('request', provider.callback());
process.stdout.write(`ISSUER ${issuer}\n`);

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => { server.close(); process.exit(0); });
}
