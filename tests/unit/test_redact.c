// SPDX-License-Identifier: GPL-2.0
/*
 * The audit redactor: one table row per pattern and per false positive it
 * avoids on purpose (docs/events.md, "Redaction"), then the properties
 * every row must have (idempotent, NULs kept, never a leak when the output
 * is cut), the in-place, argv and NAME=VALUE helpers, and the throughput
 * of redact + encode on typical records (printed, see docs/events.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "audit/redact.h"
#include "audit/encode.h"
#include "bpfbox/events.h"
#include "unit_main.h"

struct bytes {
	const char *p;
	size_t n;
};

/* A literal that may hold NULs (argv buffers): its bytes without the final NUL. */
#define B(s)                     \
	{                        \
		s, sizeof(s) - 1 \
	}

struct row {
	const char *name;
	struct bytes in, want;
	unsigned int flags;
};

#define SAME(name, s)               \
	{                           \
		name, B(s), B(s), 0 \
	}
#define RED(name, s, w)             \
	{                           \
		name, B(s), B(w), 0 \
	}
#define REDF(name, s, w, f)         \
	{                           \
		name, B(s), B(w), f \
	}

/* Made-up secrets of the shapes that matter (random, not real). */
#define GHP "ghp_OhbVrpoiVgRV5IfLBcbfnoGMbJmTPSIAoCLr"
#define PAT                                                                    \
	"github_pat_"                                                          \
	"xKmTecQoXsf2o3gyrDO1xkxwnQrS7RPeMOkIUpkDyr7OSJoRu1XXdo0cZuzren68K4Tu" \
	"nPFz46PDjqipVJ"
#define B62  "Z3aWZkSBvrjn9Wvgfygw2wMqZcUDIh7yfJs1ON43"
#define B64  "lt5Q6AGGWzaYZU6/UgCl+gk5uZ16HXsoK/gjQEHz"
#define B64U "VIfYbGafzL_g5z1-cyCtCnVwAyQedSIQqSR5jvhtQ_J88tBhMDHctdjS7xsyH86t"
#define JWT                                                   \
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."               \
	"eyJzdWIiOiIxMjM0NTY3ODkwIiwiaWF0IjoxNTE2MjM5MDIyfQ." \
	"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
#define SHA1   "3f2a9c1d4e5b6a7980f1e2d3c4b5a69788796a5b"
#define SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define UUID   "550e8400-e29b-41d4-a716-446655440000"

static const struct row rows[] = {
	/* KEY=value and KEY: value, any case; the key stays */
	RED("api_key=", "api_key=abc123", "api_key=[REDACTED]"),
	RED("API_KEY= upper case", "API_KEY=abc123", "API_KEY=[REDACTED]"),
	RED("x-api-key: header", "x-api-key: abc123", "x-api-key: [REDACTED]"),
	RED("apikey=", "apikey=abc", "apikey=[REDACTED]"),
	RED("token= in a query", "https://h/x?token=abc&page=2",
	    "https://h/x?token=[REDACTED]&page=2"),
	RED("access_token= ends with the key word", "?access_token=abc",
	    "?access_token=[REDACTED]"),
	RED("GITHUB_TOKEN= env style", "GITHUB_TOKEN=" GHP, "GITHUB_TOKEN=[REDACTED]"),
	RED("password: with a blank", "password: hunter2", "password: [REDACTED]"),
	RED("Password = with blanks", "Password = hunter2", "Password = [REDACTED]"),
	RED("password in JSON, quoted value with a blank", "{\"password\": \"hunter 2\"}",
	    "{\"password\": \"[REDACTED]\"}"),
	RED("token in single quotes", "{'token':'abc'}", "{'token':'[REDACTED]'}"),
	RED("bearer=", "bearer=abc", "bearer=[REDACTED]"),
	RED("BEARER: any case", "BEARER: abc", "BEARER: [REDACTED]"),
	RED("authorization= without scheme", "authorization=abc", "authorization=[REDACTED]"),
	RED("Authorization: Bearer keeps the scheme", "Authorization: Bearer abc.def",
	    "Authorization: Bearer [REDACTED]"),
	RED("Proxy-Authorization: Basic", "-H\0Proxy-Authorization: Basic dXNlcjpwYXNz",
	    "-H\0Proxy-Authorization: Basic [REDACTED]"),
	RED("authorization in JSON with scheme", "{\"Authorization\":\"token abc\"}",
	    "{\"Authorization\":\"token [REDACTED]\"}"),
	RED("client_secret=", "client_secret=s3cr3t", "client_secret=[REDACTED]"),
	RED("AWS_SECRET_ACCESS_KEY=", "AWS_SECRET_ACCESS_KEY=abc",
	    "AWS_SECRET_ACCESS_KEY=[REDACTED]"),
	RED("the value ends at ; and ,", "token=a;b password=c,d",
	    "token=[REDACTED];b password=[REDACTED],d"),
	RED("the value keeps = and :", "token=a=b:c d", "token=[REDACTED] d"),
	SAME("empty value", "token= password="),
	SAME("already redacted", "token=[REDACTED]"),
	SAME("tokenizer= is no key", "tokenizer=bert"),
	SAME("max_tokens= is no key", "max_tokens=100"),
	SAME("password_file= names a path", "password_file=/etc/pw"),
	SAME("a prompt", "Enter password: "),
	SAME("C++ scope", "std::token::kind"),
	SAME("prose", "the token was revoked and the password changed"),

	/* flags, value in the same or the next argument */
	RED("--token=", "--token=abc", "--token=[REDACTED]"),
	RED("--token next argument", "gh\0--token\0abc\0repo", "gh\0--token\0[REDACTED]\0repo"),
	RED("--api-key next argument", "--api-key\0k\0--verbose",
	    "--api-key\0[REDACTED]\0--verbose"),
	RED("--password next argument", "--password\0hunter2", "--password\0[REDACTED]"),
	RED("--bearer next argument", "--bearer\0abc", "--bearer\0[REDACTED]"),
	RED("--auth next argument", "--auth\0user:pw", "--auth\0[REDACTED]"),
	RED("--auth=", "--auth=user:pw", "--auth=[REDACTED]"),
	RED("--AUTH any case", "--AUTH\0x", "--AUTH\0[REDACTED]"),
	RED("--auth-token ends with a key word", "--auth-token\0abc", "--auth-token\0[REDACTED]"),
	RED("--token in a shell string", "sh\0-c\0tool --token abc def",
	    "sh\0-c\0tool --token [REDACTED] def"),
	RED("--password with a quoted value", "--password \"pa ss\" x",
	    "--password \"[REDACTED]\" x"),
	SAME("--password followed by a flag", "--password\0--verbose"),
	SAME("--token without value", "x\0--token"),
	SAME("--no-password", "--no-password\0db"),
	SAME("--author is not --auth", "git\0commit\0--author=me\0--author\0me"),
	SAME("--token-file names a path", "--token-file\0/run/token"),
	SAME("--tokenizer", "--tokenizer\0bert"),

	/* Bearer headers */
	RED("Bearer token", "Bearer abcdefgh12345", "Bearer [REDACTED]"),
	RED("bearer in a -H argument", "-H\0authorization:  bearer " JWT,
	    "-H\0authorization:  bearer [REDACTED]"),
	RED("BEARER upper case", "x BEARER abcdefgh.ijk~l+m/n=", "x BEARER [REDACTED]"),
	SAME("bearer in prose", "the Bearer of bad news"),
	SAME("bearer of a shell variable", "Bearer $TOKEN"),
	SAME("Bearer glued to a word", "xbearer abcdefgh12345"),

	/* user:password@ in URLs */
	RED("https user:password", "https://user:pa55@example.com/x",
	    "https://user:[REDACTED]@example.com/x"),
	RED("git clone with a token as password",
	    "git\0clone\0https://oauth2:glpat-abcdefghijklmnop1234@gitlab.com/"
	    "g/p.git",
	    "git\0clone\0https://oauth2:[REDACTED]@gitlab.com/g/p.git"),
	RED("postgres URL", "postgres://app:s3cr3t@db:5432/app",
	    "postgres://app:[REDACTED]@db:5432/app"),
	RED("an @ in the password: up to the last @", "https://u:p@ss@host/",
	    "https://u:[REDACTED]@host/"),
	RED("empty user", "redis://:hunter2@cache:6379", "redis://:[REDACTED]@cache:6379"),
	SAME("user without password", "https://user@example.com/"),
	SAME("host and port", "https://example.com:8443/path?q=1"),
	SAME("ssh URL", "ssh://git@github.com:22/org/repo.git"),
	SAME("@ in the path", "https://registry.npmjs.org/@types/node:1@x"),

	/* well-known prefixes: the prefix stays */
	RED("ghp_", "echo " GHP, "echo ghp_[REDACTED]"),
	RED("github_pat_", PAT, "github_pat_[REDACTED]"),
	RED("AKIA", "AKIAIOSFODNN7EXAMPLE", "AKIA[REDACTED]"),
	RED("AKIA after =", "id=AKIAIOSFODNN7EXAMPLE;", "id=AKIA[REDACTED];"),
	RED("xoxb-", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-[REDACTED]"),
	RED("xoxp-", "slack\0xoxp-1234567890-0987654321", "slack\0xoxp-[REDACTED]"),
	RED("sk-", "OPENAI=sk-proj-abc123def456ghi789jkl", "OPENAI=sk-[REDACTED]"),
	RED("sk- in a path segment", "/tmp/sk-abc123def456ghi789jkl0", "/tmp/sk-[REDACTED]"),
	SAME("sk-learn", "pip\0install\0sk-learn\0scikit-learn"),
	SAME("sk- without digits", "sk-this-is-just-a-long-name-here"),
	SAME("task- is not sk-", "task-abc123def456ghi789jkl0"),
	SAME("AKIA too short", "AKIA1234"),
	SAME("ghp_ too short", "ghp_abc"),

	/* bare opaque tokens of 32+ characters */
	RED("base62 token", "curl\0-d\0" B62, "curl\0-d\0[REDACTED]"),
	RED("base64 token with / and +", "x " B64 " y", "x [REDACTED] y"),
	RED("base64url token", B64U, "[REDACTED]"),
	RED("JWT", "jwt=" JWT, "jwt=[REDACTED]"),
	RED("a token after an inner =", "--data=key=" B62, "--data=key=[REDACTED]"),
	RED("a token as a path segment", "/api/v1/" B62 "/x", "/api/v1/[REDACTED]/x"),
	RED("32 hex digits (md5, many API keys)", "d41d8cd98f00b204e9800998ecf8427e", "[REDACTED]"),

	/* false positives avoided on purpose */
	SAME("absolute path", "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache"),
	SAME("path with camel case and digits",
	     "/home/User/Projects/MyApp2/src/components/Main.java"),
	SAME("relative path", "src/components/MyComponent2/index.tsx"),
	SAME("path with a short hex suffix",
	     "/root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/"
	     "serde-1.0.197/src/lib.rs"),
	SAME("UUID", UUID),
	SAME("UUID in a path", "/var/lib/docker/containers/" UUID "/config.v2.json"),
	SAME("UUID with a prefix", "session-" UUID),
	SAME("git object id (40 hex)", "git\0checkout\0" SHA1),
	SAME("sha256 (64 hex)", "sha256sum\0-c\0" SHA256),
	SAME("docker digest", "docker\0pull\0debian@sha256:" SHA256),
	SAME("commit URL", "https://github.com/org/repo/commit/" SHA1),
	SAME("pack file name", ".git/objects/pack/pack-" SHA1 ".pack"),
	SAME("base64 of a short string", "echo\0SGVsbG8gd29ybGQ=\0dXNlcjpwYXNz"),
	SAME("npm integrity", "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/"
			      "SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR4ynalqVxzxeyfhg=="),
	SAME("camel case identifier", "AbstractSingletonProxyFactoryBean2Impl"),
	SAME("java class name", "org.apache.commons.lang3.StringUtils"),
	SAME("snake case identifier", "test_something_really_long_name_here_v2"),
	SAME("kebab option", "--experimental-vm-modules-and-loader-v2=true"),
	SAME("host name", "ec2-54-123-45-67.compute-1.amazonaws.com"),
	SAME("long number", "17000000001234567890123456789012345"),
	SAME("python dir", "/usr/lib/python3.11/site-packages/numpy/core/include/numpy"),

	/* forms an attacker's review found unredacted (issue 17) */
	RED("mysql -pSECRET", "mysql\0-u\0root\0-pS3cr3tPw\0app",
	    "mysql\0-u\0root\0-p[REDACTED]\0app"),
	RED("mysql -p SECRET", "mysql\0-p\0S3cr3tPw\0app", "mysql\0-p\0[REDACTED]\0app"),
	RED("mysqldump -pSECRET in a shell string",
	    "sh\0-c\0/usr/bin/mysqldump -pS3cr3t app > d.sql",
	    "sh\0-c\0/usr/bin/mysqldump -p[REDACTED] app > d.sql"),
	RED("mariadb -p'SECRET'", "mariadb -p'pa ss' db", "mariadb -p'[REDACTED]' db"),
	RED("curl -u user:SECRET", "curl\0-u\0deploy:S3cr3t\0https://h/",
	    "curl\0-u\0deploy:[REDACTED]\0https://h/"),
	RED("curl -uuser:SECRET", "curl -udeploy:S3cr3t https://h/",
	    "curl -udeploy:[REDACTED] https://h/"),
	RED("curl --user user:SECRET", "curl\0--user\0me:S3cr3t", "curl\0--user\0me:[REDACTED]"),
	RED("curl --user=user:SECRET", "curl --user=me:S3cr3t x", "curl --user=me:[REDACTED] x"),
	RED("MYSQL_PWD=", "MYSQL_PWD=S3cr3t", "MYSQL_PWD=[REDACTED]"),
	RED("PGPASSWORD=", "env\0PGPASSWORD=S3cr3t\0psql", "env\0PGPASSWORD=[REDACTED]\0psql"),
	RED("Cookie: header, every cookie", "-H\0Cookie: session=abc; csrf=def",
	    "-H\0Cookie: [REDACTED]"),
	RED("Cookie: header in a quoted shell argument",
	    "curl -H \"Cookie: session=abc; csrf=def\" https://h/",
	    "curl -H \"Cookie: [REDACTED]\" https://h/"),
	RED("--cookie next argument", "curl\0--cookie\0session=abc", "curl\0--cookie\0[REDACTED]"),
	RED("X-Auth-Token: header", "-H\0X-Auth-Token: abc123", "-H\0X-Auth-Token: [REDACTED]"),
	RED("&sig= in a URL", "https://acct.blob/c/b?sv=2022&sig=abc%2Fdef&se=1",
	    "https://acct.blob/c/b?sv=2022&sig=[REDACTED]&se=1"),
	RED("&signature= in a URL", "https://h/o?Expires=1&Signature=abcdef",
	    "https://h/o?Expires=1&Signature=[REDACTED]"),
	RED("X-Amz-Signature=", "?X-Amz-Signature=0a1b2c", "?X-Amz-Signature=[REDACTED]"),
	RED("Slack webhook path",
	    "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/"
	    "aBcDeFgHiJkLmNoPqRsTuVwX",
	    "https://hooks.slack.com/services/[REDACTED]"),
	RED("URL-encoded token=", "state=token%3DS3cr3t%26x", "state=token%3D[REDACTED]"),
	RED("URL-encoded JSON password", "d=%7B%22password%22%3A%22hunter2%22%7D",
	    "d=%7B%22password%22%3A%22[REDACTED]"),
	RED("URL-encoded base64 token", "cb?code=Z3aWZkSBvrjn9Wvg%2Bfygw2wMqZcUDIh7yfJs1ON43%3D",
	    "cb?code=[REDACTED]"),

	/* passwords on command lines, keyed by the program (audit review, task 1) */
	RED("docker login -p", "docker\0login\0-u\0me\0-p\0S3cr3tPw\0reg.io",
	    "docker\0login\0-u\0me\0-p\0[REDACTED]\0reg.io"),
	RED("sudo docker login -pSECRET", "sudo\0-u\0root\0/usr/bin/docker\0login\0-pS3cr3t",
	    "sudo\0-u\0root\0/usr/bin/docker\0login\0-p[REDACTED]"),
	RED("podman login -p in a shell string", "sh\0-c\0podman login -p 'pa ss' q.io; ls -p x",
	    "sh\0-c\0podman login -p '[REDACTED]' q.io; ls -p x"),
	RED("sshpass -p", "sshpass\0-p\0S3cr3t\0ssh\0host", "sshpass\0-p\0[REDACTED]\0ssh\0host"),
	RED("sshpass -pSECRET", "sshpass -pS3cr3t ssh host", "sshpass -p[REDACTED] ssh host"),
	RED("az login -p", "az\0login\0-u\0me\0-p\0S3cr3t", "az\0login\0-u\0me\0-p\0[REDACTED]"),
	RED("openssl -pass pass:", "openssl\0enc\0-aes256\0-pass\0pass:S3cr3t\0-in\0f",
	    "openssl\0enc\0-aes256\0-pass\0pass:[REDACTED]\0-in\0f"),
	RED("openssl -passout and -passin pass:",
	    "openssl\0pkcs12\0-passin\0pass:S3cr3t\0-passout\0pass:0th3r",
	    "openssl\0pkcs12\0-passin\0pass:[REDACTED]\0-passout\0pass:[REDACTED]"),
	RED("openssl enc -k", "openssl\0enc\0-k\0S3cr3t", "openssl\0enc\0-k\0[REDACTED]"),
	RED("redis-cli -a", "redis-cli\0-h\0db\0-a\0S3cr3t\0ping",
	    "redis-cli\0-h\0db\0-a\0[REDACTED]\0ping"),
	RED("smbclient -U user%SECRET", "smbclient\0//h/s\0-U\0me%S3cr3t",
	    "smbclient\0//h/s\0-U\0me%[REDACTED]"),
	RED("smbclient --user=user%SECRET", "smbclient --user=me%S3cr3t //h/s",
	    "smbclient --user=me%[REDACTED] //h/s"),
	RED("htpasswd -b FILE user SECRET", "htpasswd\0-b\0-c\0/etc/pw\0me\0S3cr3t",
	    "htpasswd\0-b\0-c\0/etc/pw\0me\0[REDACTED]"),
	RED("htpasswd -nbB user SECRET",
	    "htpasswd\0-nbB\0-C\0"
	    "10\0me\0S3cr3t",
	    "htpasswd\0-nbB\0-C\0"
	    "10\0me\0[REDACTED]"),
	RED("gpg --passphrase", "gpg\0--batch\0--passphrase\0S3cr3t\0-c\0f",
	    "gpg\0--batch\0--passphrase\0[REDACTED]\0-c\0f"),
	RED("--passphrase=", "gpg --passphrase=S3cr3t -c f", "gpg --passphrase=[REDACTED] -c f"),
	RED("--pass=", "tool\0--pass=S3cr3t", "tool\0--pass=[REDACTED]"),
	RED("--pass next argument", "tool\0--pass\0S3cr3t", "tool\0--pass\0[REDACTED]"),
	RED("7z -pSECRET", "7z\0a\0-pS3cr3t\0out.7z\0dir", "7z\0a\0-p[REDACTED]\0out.7z\0dir"),
	RED("zip -P", "zip\0-r\0-P\0S3cr3t\0out.zip\0dir", "zip\0-r\0-P\0[REDACTED]\0out.zip\0dir"),
	RED("ssh-keygen -N and -P", "ssh-keygen\0-p\0-P\0Old0ne\0-N\0S3cr3t\0-f\0k",
	    "ssh-keygen\0-p\0-P\0[REDACTED]\0-N\0[REDACTED]\0-f\0k"),
	RED("ldapsearch -w", "ldapsearch\0-D\0cn=admin\0-w\0S3cr3t",
	    "ldapsearch\0-D\0cn=admin\0-w\0[REDACTED]"),
	RED("env NAME=VALUE whose name holds PASS, KEY",
	    "env\0DB_PASS=S3cr3t\0SMTP_PASS=0th3r\0STRIPE_KEY=rk_live_ab\0cmd",
	    "env\0DB_PASS=[REDACTED]\0SMTP_PASS=[REDACTED]\0STRIPE_KEY=[REDACTED]\0cmd"),
	RED("SECRET_KEY_BASE= (a part, not the end)", "SECRET_KEY_BASE=S3cr3t rails s",
	    "SECRET_KEY_BASE=[REDACTED] rails s"),
	RED("rk_live_ prefix", "x rk_live_51HxAbCdEfGhIjKlMnOp", "x rk_live_[REDACTED]"),
	RED("a netrc line", "sh\0-c\0echo machine h login me password S3cr3t >> ~/.netrc",
	    "sh\0-c\0echo machine h login me password [REDACTED] >> ~/.netrc"),
	RED("a netrc on lines", "machine h\n  login me\n  password S3cr3t\n",
	    "machine h\n  login me\n  password [REDACTED]\n"),
	RED("the program after docker exec", "docker\0exec\0db\0mysql\0-pS3cr3t",
	    "docker\0exec\0db\0mysql\0-p[REDACTED]"),
	SAME("ls -p", "ls\0-p\0dir"),
	SAME("ls -p in a shell string", "sh\0-c\0ls -p x; grep -a y z"),
	SAME("grep -a", "grep\0-a\0pattern\0file"),
	SAME("zip -r", "zip\0-r\0out.zip\0dir"),
	SAME("docker run -p (not login)", "docker\0run\0-p\08080:80\0nginx"),
	SAME("openssl -passin env:", "openssl\0rsa\0-passin\0env:PW\0-in\0k"),
	SAME("ssh-keygen -N ''", "ssh-keygen -N '' -f k"),
	SAME("htpasswd without -b", "htpasswd\0-c\0/etc/pw\0me"),
	SAME("PASSWORD_FILE= names a path", "PASSWORD_FILE=/run/pw KEY_ID=abc"),
	SAME("--sort-key=", "sort\0--key=2\0--sort-key=3"),
	SAME("--bypass, --pass-through", "x\0--bypass\0y\0--pass-through\0z"),
	SAME("password in prose", "git\0commit\0-m\0the default password is now longer"),

	/* flags */
	REDF("a token cut by the end of a truncated argv", "curl\0-d\0aB3xK9mQ2z",
	     "curl\0-d\0[REDACTED]", REDACT_TAIL_CUT),
	REDF("a prefix cut by the end", "x\0ghp_abc", "x\0ghp_[REDACTED]", REDACT_TAIL_CUT),
	REDF("a password cut by the end", "https://u:pa", "https://u:[REDACTED]", REDACT_TAIL_CUT),
	SAME("without REDACT_TAIL_CUT the same stays", "curl\0-d\0aB3xK9mQ2z"),
	REDF("REDACT_NO_OPAQUE keeps hashed names",
	     "/root/.npm/_cacache/index-v5/ad/75/"
	     "b5626d32fb337baae1fb7c03d939ea80f506efd763333540d3807dec55bf",
	     "/root/.npm/_cacache/index-v5/ad/75/"
	     "b5626d32fb337baae1fb7c03d939ea80f506efd763333540d3807dec55bf",
	     REDACT_NO_OPAQUE),
	REDF("REDACT_NO_OPAQUE still redacts keys", "/tmp/x?token=abc", "/tmp/x?token=[REDACTED]",
	     REDACT_NO_OPAQUE),
};

static size_t count_nul(const char *p, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += !p[i];
	return c;
}

static void print_bytes(const char *what, const char *p, size_t n)
{
	printf("  %s: \"", what);
	for (size_t i = 0; i < n; i++)
		printf(p[i] ? "%c" : "\\0", p[i]);
	printf("\"\n");
}

/*
 * What must stay readable: ids, paths, versions and branch names an
 * operator reads in an audit line, and the flags the new rules look like.
 */
static const struct bytes readable[] = {
	B(SHA1),
	B("3f2a9c1"),
	B("git\0cherry-pick\0" SHA1 "\0e3b0c44"),
	B(SHA256),
	B(UUID),
	B("F47AC10B-58CC-4372-A567-0E02B2C3D479"),
	B("/srv/app/releases/20241123T215500Z/current"),
	B("/home/dev/src/bpfbox/userspace/audit/redact.c"),
	B("/usr/lib/x86_64-linux-gnu/libssl.so.3"),
	B("./node_modules/.pnpm/@babel+core@7.24.0/node_modules"),
	B("1.2.3-rc.1+build.20241123"),
	B("v20.11.0"),
	B("linux-image-6.18.44-fc-v669"),
	B("python3.12"),
	B("go1.22.5.linux-amd64.tar.gz"),
	B("feature/add-user-auth-token-refresh"),
	B("release/2024.11"),
	B("dependabot/npm_and_yarn/lodash-4.17.21"),
	B("git\0push\0-u\0origin\0fix/password-reset-email"),
	B("refs/heads/main"),
	B("mkdir\0-p\0build/out"),
	B("ssh\0-p\02222\0host"),
	B("git\0add\0-p"),
	B("sort\0-u\0words.txt"),
	B("cp -p a b; mysql -e 'select 1'"),
	B("curl\0-u\0deploy\0https://h/"),
	B("PWD=/home/dev OLDPWD=/tmp"),
	B("git\0log\0--show-signature\0-1"),
	B("--cookie-jar\0/tmp/jar.txt"),
	B("https://hooks.slack.com/"),
	B("https://example.com/search?q=hello%20world%20again&page=2"),
	B("/home/dev/My%20Documents/report%202024.pdf"),
};

static void test_readable(void **state)
{
	char out[REDACT_MAX(512)];
	int bad = 0;

	(void)state;
	for (size_t r = 0; r < sizeof(readable) / sizeof(readable[0]); r++) {
		const struct bytes *t = &readable[r];
		size_t n = redact(t->p, t->n, out, sizeof(out), 0);

		if (n != t->n || memcmp(out, t->p, n)) {
			print_bytes("readable", t->p, t->n);
			print_bytes("got     ", out, n);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void test_table(void **state)
{
	char out[REDACT_MAX(512)];
	int bad = 0;

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		const struct row *t = &rows[r];
		size_t n;

		assert_true(t->in.n <= 512);
		n = redact(t->in.p, t->in.n, out, sizeof(out), t->flags);
		if (n != t->want.n || memcmp(out, t->want.p, n)) {
			printf("row \"%s\"\n", t->name);
			print_bytes("in  ", t->in.p, t->in.n);
			print_bytes("want", t->want.p, t->want.n);
			print_bytes("got ", out, n);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* Every row: NULs kept, a second pass changes nothing, the bound holds. */
static void test_properties(void **state)
{
	char out[REDACT_MAX(512)], again[REDACT_MAX(REDACT_MAX(512))];

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		const struct row *t = &rows[r];
		size_t n = redact(t->in.p, t->in.n, out, sizeof(out), t->flags), m;

		assert_true(n <= REDACT_MAX(t->in.n));
		assert_int_equal(count_nul(out, n), count_nul(t->in.p, t->in.n));
		m = redact(out, n, again, sizeof(again), t->flags & ~REDACT_TAIL_CUT);
		if (m != n || memcmp(out, again, n))
			print_bytes(t->name, again, m);
		assert_memory_equal(out, again, n);
		assert_int_equal(m, n);
	}
}

/* A cut output holds no byte of the secret, whatever the room. */
static void test_small_cap_never_leaks(void **state)
{
	static const char in[] = "login --password hunter2secret --token=s3cr3tvalue " GHP;
	char out[sizeof(in) * 3];

	(void)state;
	for (size_t cap = 0; cap < sizeof(out); cap++) {
		size_t n = redact(in, sizeof(in) - 1, out, cap, 0);

		assert_true(n <= cap);
		assert_null(memmem(out, n, "hunter2", 7));
		assert_null(memmem(out, n, "s3cr3t", 6));
		assert_null(memmem(out, n, "OhbVrpoi", 8));
	}
}

/* The worst growth: short secrets after the shortest triggers. */
static void test_bound(void **state)
{
	char in[512], out[REDACT_MAX(512)];
	size_t n = 0;

	(void)state;
	while (n + 8 <= sizeof(in)) {
		memcpy(in + n, "token=x ", 8);
		n += 8;
	}
	assert_true(redact(in, n, out, sizeof(out), 0) <= REDACT_MAX(n));
	n = 0;
	while (n + 8 <= sizeof(in)) {
		memcpy(in + n, "--auth\0x", 8);
		n += 8;
	}
	assert_true(redact(in, n, out, sizeof(out), 0) <= REDACT_MAX(n));
	n = 0;
	while (n + 8 <= sizeof(in)) {
		memcpy(in + n, "a://:x@ ", 8);
		n += 8;
	}
	assert_true(redact(in, n, out, sizeof(out), 0) <= REDACT_MAX(n));
	/* the shortest: a one-byte secret glued to a program's flag */
	memcpy(in, "7z", 2);
	for (n = 2; n + 4 <= sizeof(in); n += 4)
		memcpy(in + n, "\0-px", 4);
	assert_true(redact(in, n, out, sizeof(out), 0) <= REDACT_MAX(n));
	assert_true(redact(in, n, out, sizeof(out), 0) > 3 * n);
}

static void test_inplace(void **state)
{
	char buf[64] = "--token\0abc\0x";
	char same[64] = "ls\0-la\0/tmp";
	size_t n;

	(void)state;
	n = redact_inplace(buf, 13, sizeof(buf), 0);
	assert_int_equal(n, 20);
	assert_memory_equal(buf, "--token\0[REDACTED]\0x", 20);
	n = redact_inplace(same, 11, sizeof(same), 0);
	assert_int_equal(n, 11);
	assert_memory_equal(same, "ls\0-la\0/tmp", 11);
}

struct collect {
	char args[8][64];
	int n;
};

static void collect_arg(void *ctx, const char *arg, size_t len)
{
	struct collect *c = ctx;

	assert_true(c->n < 8 && len < sizeof(c->args[0]));
	memcpy(c->args[c->n], arg, len);
	c->args[c->n++][len] = '\0';
}

static void test_argv(void **state)
{
	char *const argv[] = {"gh", "--token", "abc", "", "api_key=1", NULL};
	char *const none[] = {NULL};
	struct collect c = {.n = 0};

	(void)state;
	assert_int_equal(redact_argv(argv, collect_arg, &c, 0), 0);
	assert_int_equal(c.n, 5);
	assert_string_equal(c.args[0], "gh");
	assert_string_equal(c.args[1], "--token");
	assert_string_equal(c.args[2], "[REDACTED]");
	assert_string_equal(c.args[3], "");
	assert_string_equal(c.args[4], "api_key=[REDACTED]");
	c.n = 0;
	assert_int_equal(redact_argv(none, collect_arg, &c, 0), 0);
	assert_int_equal(c.n, 0);
}

static void test_value(void **state)
{
	char out[REDACT_MAX(64)];
	size_t n;

	(void)state;
	assert_true(redact_is_secret_name("GITHUB_TOKEN", 12));
	assert_true(redact_is_secret_name("OPENAI_API_KEY", 14));
	assert_true(redact_is_secret_name("PGPASSWORD", 10));
	assert_false(redact_is_secret_name("PATH", 4));
	assert_false(redact_is_secret_name("TOKENIZERS_PARALLELISM", 22));
	assert_true(redact_is_secret_name("DB_PASS", 7));
	assert_true(redact_is_secret_name("SMTP_PASS", 9));
	assert_true(redact_is_secret_name("STRIPE_KEY", 10));
	assert_true(redact_is_secret_name("SECRET_KEY_BASE", 15));
	assert_false(redact_is_secret_name("PASSWORD_FILE", 13));
	assert_false(redact_is_secret_name("KEYBOARD", 8));
	assert_false(redact_is_secret_name("PWD", 3));
	assert_false(redact_is_secret_name("SSH_AUTH_SOCK", 13));
	n = redact_value("DB_PASS", "hunter2", 7, out, sizeof(out), 0);
	assert_int_equal(n, REDACT_MARKER_LEN);
	n = redact_value("NPM_TOKEN", "abc", 3, out, sizeof(out), 0);
	assert_int_equal(n, REDACT_MARKER_LEN);
	assert_memory_equal(out, REDACT_MARKER, n);
	n = redact_value("NPM_TOKEN", "", 0, out, sizeof(out), 0);
	assert_int_equal(n, 0);
	n = redact_value("PATH", "/usr/bin:/bin", 13, out, sizeof(out), 0);
	assert_memory_equal(out, "/usr/bin:/bin", 13);
	n = redact_value("EXTRA", "x token=abc", 11, out, sizeof(out), 0);
	assert_int_equal(n, 18);
	assert_memory_equal(out, "x token=[REDACTED]", 18);
}

/* ---- throughput: redact + encode, as the agent would run them ---- */

/* Sanitized builds (make test-asan) run a tenth: the numbers mean nothing there. */
#if defined(__SANITIZE_ADDRESS__)
#define BENCH_DEFAULT 100000
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BENCH_DEFAULT 100000
#endif
#endif
#ifndef BENCH_DEFAULT
#define BENCH_DEFAULT 1000000
#endif

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill_hdr(struct bpfbox_event_hdr *h, uint32_t type, const char *comm)
{
	h->type = type;
	h->session = 1;
	h->seq = 42;
	h->ts_ns = 123456789012345ULL;
	h->pid = 4242;
	h->tid = 4242;
	h->ppid = 4200;
	h->uid = 1000;
	snprintf(h->comm, sizeof(h->comm), "%s", comm);
}

/*
 * A typical mix: per exec, two forks and exits, eight file opens (one
 * denied) and a connect. BENCH_EVENTS sets the count (default 1000000).
 */
static void test_throughput(void **state)
{
	static const char argv1[] = "git\0-c\0color.ui=never\0log\0--oneline\0-n\0"
				    "20\0origin/main";
	static const char argv2[] = "curl\0-sS\0-H\0Authorization: Bearer " JWT
				    "\0https://api.example.com/v1/items?page=2";
	static const char *const paths[] = {
		"/etc/ld.so.cache",
		"/lib/x86_64-linux-gnu/libc.so.6",
		"src/main.c",
		"/usr/lib/locale/C.utf8/LC_CTYPE",
		"/home/dev/project/.git/HEAD",
		"/home/dev/project/node_modules/react/index.js",
		"/etc/shadow",
		"build/obj/main.o",
	};
	struct bpfbox_exec_event ex = {0};
	struct bpfbox_file_event fe[8];
	struct bpfbox_connect_event ce = {0};
	struct bpfbox_fork_event fk = {0};
	struct bpfbox_exit_event xe = {0};
	struct audit_clock clk = {0};
	struct jsonw w = {0};
	char red[REDACT_MAX(BPFBOX_ARGV_LEN)];
	const char *env = getenv("BENCH_EVENTS");
	long target = env ? atol(env) : BENCH_DEFAULT, events = 0;
	size_t bytes = 0, sink = 0;
	double t0, dt;

	(void)state;
	fill_hdr(&ex.hdr, BPFBOX_EV_EXEC, "git");
	snprintf(ex.filename, sizeof(ex.filename), "/usr/bin/git");
	fill_hdr(&fk.hdr, BPFBOX_EV_FORK, "sh");
	fk.child_pid = 4243;
	fill_hdr(&xe.hdr, BPFBOX_EV_EXIT, "git");
	fill_hdr(&ce.hdr, BPFBOX_EV_CONNECT, "curl");
	ce.family = AF_INET;
	ce.port = 443;
	memcpy(ce.addr, "\x5d\xb8\xd8\x22", 4);
	for (int i = 0; i < 8; i++) {
		memset(&fe[i], 0, sizeof(fe[i]));
		fill_hdr(&fe[i].hdr, BPFBOX_EV_FILE, "git");
		snprintf(fe[i].path, sizeof(fe[i].path), "%s", paths[i]);
		fe[i].flags = 0x80000;
		fe[i].count = 1;
	}
	fe[6].hdr.decision = BPFBOX_DENY;
	fe[6].hdr.layer = BPFBOX_LAYER_LANDLOCK;
	fe[6].hdr.err = -13;
	t0 = now_s();
	for (long round = 0; events < target; round++) {
		const char *argv = round & 1 ? argv2 : argv1;
		size_t alen = round & 1 ? sizeof(argv2) : sizeof(argv1);

		/* exec: the argv buffer goes through the redactor first */
		memcpy(ex.argv, argv, alen);
		ex.argv_len = alen;
		sink += redact(ex.argv, ex.argv_len, red, sizeof(red), 0);
		audit_encode_record(&w, &clk, &ex, sizeof(ex), "d6ef155bf14692eed2df1868c7421bfe",
				    NULL);
		for (int i = 0; i < 2; i++) {
			audit_encode_record(&w, &clk, &fk, sizeof(fk),
					    "d6ef155bf14692eed2df1868c7421bfe", NULL);
			audit_encode_record(&w, &clk, &xe, sizeof(xe),
					    "d6ef155bf14692eed2df1868c7421bfe", NULL);
		}
		for (int i = 0; i < 8; i++)
			audit_encode_record(&w, &clk, &fe[i], sizeof(fe[i]),
					    "d6ef155bf14692eed2df1868c7421bfe", NULL);
		audit_encode_record(&w, &clk, &ce, sizeof(ce), "d6ef155bf14692eed2df1868c7421bfe",
				    NULL);
		events += 14;
		if (w.len >= 64 * 1024) {
			bytes += w.len;
			jsonw_reset(&w);
		}
	}
	dt = now_s() - t0;
	bytes += w.len;
	printf("redact+encode: %ld events in %.3f s: %.0f events/s, %.0f MB/s "
	       "of JSON (%zu)\n",
	       events, dt, events / dt, bytes / dt / 1e6, sink % 10);
	jsonw_free(&w);
}

/* The redactor alone on a typical exec argv. */
static void test_throughput_redact(void **state)
{
	static const char argv[] = "python3\0-m\0pytest\0-q\0tests/unit/"
				   "test_api.py\0-k\0not slow\0--token\0abc";
	char out[REDACT_MAX(sizeof(argv))];
	const char *env = getenv("BENCH_EVENTS");
	long target = env ? atol(env) : BENCH_DEFAULT;
	size_t sink = 0;
	double t0 = now_s(), dt;

	(void)state;
	for (long i = 0; i < target; i++)
		sink += redact(argv, sizeof(argv) - 1, out, sizeof(out), 0);
	dt = now_s() - t0;
	printf("redact: %ld argv of %zu bytes in %.3f s: %.0f/s, %.0f MB/s "
	       "(%zu)\n",
	       target, sizeof(argv) - 1, dt, target / dt, target * (sizeof(argv) - 1) / dt / 1e6,
	       sink % 10);
}

UNIT_MAIN(cmocka_unit_test(test_table), cmocka_unit_test(test_readable),
	  cmocka_unit_test(test_properties), cmocka_unit_test(test_small_cap_never_leaks),
	  cmocka_unit_test(test_bound), cmocka_unit_test(test_inplace), cmocka_unit_test(test_argv),
	  cmocka_unit_test(test_value), cmocka_unit_test(test_throughput),
	  cmocka_unit_test(test_throughput_redact))
