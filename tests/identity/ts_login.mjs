// The TypeScript SDK client logs in to an MCP server and reads one resource; prints a JSON report.
//
//   node ts_login.mjs SERVER_URL ACCOUNT URI
//
// The SDK does the OAuth part itself (401, RFC 9728 metadata, authorization server metadata,
// dynamic client registration, PKCE, the `resource` parameter, the token request). This script only
// plays the browser: it follows the authorization URL through oidc_server.mjs's auto-login
// interaction (login_hint = ACCOUNT) to the redirect URI, which nothing listens on, and hands the
// code back through transport.finishAuth. Resolves @modelcontextprotocol/sdk from the node_modules
// folder next to a copy of this file (tests/identity/package.json pins it).
import { createServer } from 'node:net';

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [serverUrl, account, uri] = process.argv.slice(2);

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => { server.listen(0, '127.0.0.1', resolve); });
  const { port } = server.address();
  await new Promise((resolve) => { server.close(resolve); });
  return port;
}

const redirectUrl = `http://127.0.0.1:${await freePort()}/callback`;

// A browser's cookie jar, reduced to what one host on loopback needs (names only, no paths).
function remember(jar, response) {
  for (const header of response.headers.getSetCookie()) {
    const [pair, ...attributes] = header.split(';');
    const name = pair.slice(0, pair.indexOf('=')).trim();
    const expired = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/iu.test(a));
    if (expired) jar.delete(name); else jar.set(name, pair.slice(pair.indexOf('=') + 1).trim());
  }
}

async function followLogin(authorizationUrl) {
  const jar = new Map();
  let url = new URL(authorizationUrl);
  url.searchParams.set('login_hint', account);
  for (let hop = 0; hop < 10; hop += 1) {
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    remember(jar, response);
    const location = response.headers.get('location');
    if (!location) throw new Error(`${url} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    url = new URL(location, url);
    if (url.href.startsWith(redirectUrl)) {
      const code = url.searchParams.get('code');
      if (!code) throw new Error(`the authorization server answered ${url.search}`);
      return code;
    }
  }
  throw new Error(`no redirect to ${redirectUrl} after 10 hops`);
}

class TestBrowserProvider {
  report = { authorizationUrls: [] };

  get redirectUrl() { return redirectUrl; }

  get clientMetadata() {
    return {
      redirect_uris: [redirectUrl], client_name: 'identity-e2e-ts', token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    };
  }

  clientInformation() { return this.client; }

  saveClientInformation(info) { this.client = info; }

  tokens() { return this.saved; }

  saveTokens(tokens) { this.saved = tokens; }

  saveCodeVerifier(verifier) { this.verifier = verifier; }

  codeVerifier() { return this.verifier; }

  async redirectToAuthorization(authorizationUrl) {
    this.report.authorizationUrls.push(authorizationUrl.href);
    this.code = await followLogin(authorizationUrl);
  }
}

const provider = new TestBrowserProvider();
async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider });
  const client = new Client({ name: 'identity-e2e-ts', version: '0' });
  await client.connect(transport);
  return client;
}

let client;
try {
  client = await connect();
} catch (error) {
  if (!(error instanceof UnauthorizedError) || !provider.code) throw error;
  // The SDK sent the browser off and stopped; with the code back, it exchanges it and connects again.
  await new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider }).finishAuth(provider.code);
  client = await connect();
}
const result = await client.readResource({ uri });
await client.close();
process.stdout.write(`${JSON.stringify({
  ...provider.report,
  clientId: provider.client?.client_id ?? null,
  // The token's claims, never the token: JWT access tokens (RFC 9068) are readable by design.
  tokenClaims: JSON.parse(Buffer.from(provider.saved.access_token.split('.')[1], 'base64url').toString()),
  result,
})}\n`);
