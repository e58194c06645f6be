/* The HTTP/1.1 client's URL split and response parser: Content-Length, chunked bodies (Go's
 * net/http chunks larger responses), and one-line refusals. */
#include <errno.h>
#include <string.h>

#include "harness.h"
#include "net/net.h"

TEST(http_url_split_defaults_the_port_and_refuses_what_it_cannot_send)
{
	char h[64], p[64];

	CHECK(http_url_split("http://10.42.0.1:8080/self", h, sizeof h, p, sizeof p) == 0);
	CHECK(!strcmp(h, "10.42.0.1:8080") && !strcmp(p, "/self"));
	CHECK(http_url_split("http://example", h, sizeof h, p, sizeof p) == 0);
	CHECK(!strcmp(h, "example:80") && !strcmp(p, "/"));
	CHECK(http_url_split("https://x/", h, sizeof h, p, sizeof p) == -EINVAL);
	CHECK(http_url_split("http:///x", h, sizeof h, p, sizeof p) == -EINVAL);
	CHECK(http_url_split("http://u@x/", h, sizeof h, p, sizeof p) == -EINVAL);
	CHECK(http_url_split("http://x/a b", h, sizeof h, p, sizeof p) == -EINVAL);
	CHECK(http_url_split("http://x/a\r\nHost: y", h, sizeof h, p, sizeof p) == -EINVAL);
}

TEST(http_parse_reads_content_length_and_chunked_bodies)
{
	char a[] =
	    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length: 5\r\n\r\nhelloXX";
	char b[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		   "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n";
	char c[] = "HTTP/1.0 404 Not Found\r\n\r\nnot found";
	char *body, err[128];
	size_t len;
	int status;

	CHECK(http_parse_response(a, strlen(a), &status, &body, &len, err, sizeof err) == 0);
	CHECK(status == 200 && len == 5 && !memcmp(body, "hello", 5));
	CHECK(http_parse_response(b, strlen(b), &status, &body, &len, err, sizeof err) == 0);
	CHECK(len == 12 && !memcmp(body, "hello, world", 12));
	CHECK(http_parse_response(c, strlen(c), &status, &body, &len, err, sizeof err) == 0);
	CHECK(status == 404 && len == 9);
}

TEST(http_parse_refuses_broken_responses_with_one_line)
{
	static const char *const bad[] = {
	    "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
	    "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\nx",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nff\r\nshort\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello",
	    "HTTP/2 200\r\n\r\n",
	    "HTTP/1.1 2x0 OK\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nno end of headers",
	};
	char buf[256], *body, err[128];
	size_t len;
	int status;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		strcpy(buf, bad[i]);
		err[0] = 0;
		if (http_parse_response(buf, strlen(buf), &status, &body, &len, err, sizeof err) !=
		    -EINVAL) {
			harness_fail(__FILE__, __LINE__, "accepted case %zu", i);
			return;
		}
		CHECK(!strncmp(err, "http: ", 6) && !strchr(err, '\n'));
	}
}

TEST(http_url_split_takes_a_query_and_drops_a_fragment)
{
	char h[64], p[64];

	CHECK(http_url_split("http://x:8080?a=1#frag", h, sizeof h, p, sizeof p) == 0);
	CHECK(!strcmp(h, "x:8080") && !strcmp(p, "/?a=1"));
	CHECK(http_url_split("http://[::1]/y", h, sizeof h, p, sizeof p) == 0);
	CHECK(!strcmp(h, "[::1]:80") && !strcmp(p, "/y"));
}

TEST(http_location_resolves_absolute_and_relative_redirects)
{
	const char *base = "https://github.com:443/org/repo/releases/download/v1/kubelet?x=1";
	char out[512];

	CHECK(http_location_resolve(base, "https://objects.example/a?sig=1#f", out, sizeof out) ==
	      0);
	CHECK(!strcmp(out, "https://objects.example/a?sig=1"));
	CHECK(http_location_resolve(base, "//cdn.example/b", out, sizeof out) == 0);
	CHECK(!strcmp(out, "https://cdn.example/b"));
	CHECK(http_location_resolve(base, "/root", out, sizeof out) == 0);
	CHECK(!strcmp(out, "https://github.com:443/root"));
	CHECK(http_location_resolve(base, "v2/kubelet", out, sizeof out) == 0);
	CHECK(!strcmp(out, "https://github.com:443/org/repo/releases/download/v1/v2/kubelet"));
	CHECK(http_location_resolve(base, "?x=2", out, sizeof out) == 0);
	CHECK(!strcmp(out, "https://github.com:443/org/repo/releases/download/v1/kubelet?x=2"));
	CHECK(http_location_resolve("http://h", "x", out, sizeof out) == 0);
	CHECK(!strcmp(out, "http://h/x"));
	/* what could not be fetched, or would split the request line, is refused */
	CHECK(http_location_resolve(base, "ftp://x/y", out, sizeof out) == -EINVAL);
	CHECK(http_location_resolve(base, "file:/etc/passwd", out, sizeof out) == -EINVAL);
	CHECK(http_location_resolve(base, "/a b", out, sizeof out) == -EINVAL);
	CHECK(http_location_resolve(base, "https://u@h/", out, sizeof out) == -EINVAL);
	CHECK(http_location_resolve(base, "/x", out, 10) == -EINVAL);
}
