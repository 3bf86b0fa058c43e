// An OpenID provider for the tests: oidc-provider (the certified Node implementation)
// issuing client-credentials JWT access tokens.
//
//   node oidc_provider.mjs PREFIX PORT CONFIG_JSON   (PREFIX: where npm installed oidc-provider)
//
// CONFIG_JSON: {"resource": URL, "scopes": "a b", "clients": [{"id", "secret", "scope", "ttl"}],
//               "jwks": {"keys": [private JWKs]} (optional: the signing keys)}
// A token is issued for the resource the client names (RFC 8707 `resource`), the
// gateway's by default; its audience is that resource. Prints "listening URL" once up.
import { pathToFileURL } from "node:url";
import path from "node:path";

const entry = path.join(process.argv[2], "node_modules", "oidc-provider", "lib", "index.js");
const { default: Provider } = await import(pathToFileURL(entry).href);

const port = Number(process.argv[3]);
const config = JSON.parse(process.argv[4]);
const issuer = `http://127.0.0.1:${port}`;
const ttl = Object.fromEntries(config.clients.map((c) => [c.id, c.ttl ?? 300]));

const provider = new Provider(issuer, {
  clients: config.clients.map((c) => ({
    client_id: c.id,
    client_secret: c.secret,
    grant_types: ["client_credentials"],
    response_types: [],
    redirect_uris: [],
    scope: c.scope,
  })),
  scopes: config.scopes.split(" "),
  ...(config.jwks ? { jwks: config.jwks } : {}),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => config.resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, client) => ({
        scope: config.scopes,
        audience: resource,
        accessTokenTTL: ttl[client.clientId],
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
});
provider.proxy = false;
const server = provider.listen(port, "127.0.0.1", () => {
  console.log(`listening ${issuer}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
