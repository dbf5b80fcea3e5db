/*
 * ts_gid.c
 *		Each namespace's own space of global ids (issue 32).
 *
 * A connection whose token is scoped to a namespace prepares, resolves
 * and lists prepared sessions by the gids it chose, but the store keeps
 * them tagged with its namespace: "~" and 16 hex digits of the SHA-256 of
 * the namespace, then ":" (TS_GID_TAG_LEN bytes), then the gid.  So two
 * tenants' gids never meet: neither can prepare a gid that blocks the
 * other's, learn from "already prepared" that the other used one, or
 * resolve the other's, and a RESOLVE of a gid that is not its own is
 * answered NOT_FOUND whatever the other holds.  A full-access connection
 * uses gids as they are and sees the stored, tagged form of a tenant's.
 *
 * Sessions prepared by a scoped connection before the tags were kept
 * untagged: a scoped connection still sees and resolves such a session
 * when every table it wrote is in its namespace, as it did then.
 */
#include "ts_registry.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "tc_client.h"

_Static_assert(TS_GID_MAX >= TC_GID_MAX + TS_GID_TAG_LEN,
			   "a stored gid holds a client's gid and its namespace's tag");

/* The tag of namespace scope into tag (TS_GID_TAG_LEN characters and a NUL). */
static void
gid_tag(const char *scope, char tag[TS_GID_TAG_LEN + 1])
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (EVP_Digest(scope, strlen(scope), digest, &len, EVP_sha256(), NULL) != 1 || len < 8)
		memset(digest, 0, 8);
	tag[0] = '~';
	for (int i = 0; i < 8; i++)
		snprintf(tag + 1 + 2 * i, 3, "%02x", digest[i]);
	tag[TS_GID_TAG_LEN - 1] = ':';
	tag[TS_GID_TAG_LEN] = '\0';
}

/* Whether gid looks like another namespace's stored gid: a tag, then more. */
static bool
gid_tagged(const char *gid)
{
	if (gid[0] != '~' || strlen(gid) <= TS_GID_TAG_LEN || gid[TS_GID_TAG_LEN - 1] != ':')
		return false;
	for (int i = 1; i < TS_GID_TAG_LEN - 1; i++)
		if (!((gid[i] >= '0' && gid[i] <= '9') || (gid[i] >= 'a' && gid[i] <= 'f')))
			return false;
	return true;
}

int
ts_gid_store(const char *scope, const char *gid, char *out, size_t size, TsError *err)
{
	size_t		len = gid != NULL ? strlen(gid) : 0;
	char		tag[TS_GID_TAG_LEN + 1];

	if (len == 0 || len > TC_GID_MAX)
	{
		ts_error_set(err, TCOPY__ERROR_CODE__ERROR_PROTOCOL,
					 "a global id must have 1 to %d bytes, not %zu", TC_GID_MAX, len);
		return -1;
	}
	if (scope == NULL)
	{
		snprintf(out, size, "%s", gid);
		return 0;
	}
	gid_tag(scope, tag);
	snprintf(out, size, "%s%s", tag, gid);
	return 0;
}

bool
ts_gid_visible(const TsPrepared *entry, const char *scope)
{
	/* no prefix (out of memory): seen with full access only */
	return scope == NULL ||
		(entry->scope_prefix != NULL &&
		 strncmp(entry->scope_prefix, scope, strlen(scope)) == 0);
}

const char *
ts_gid_shown(const TsPrepared *entry, const char *scope)
{
	char		tag[TS_GID_TAG_LEN + 1];

	if (scope == NULL)
		return entry->gid;
	gid_tag(scope, tag);
	if (strncmp(entry->gid, tag, TS_GID_TAG_LEN) == 0)
		return entry->gid + TS_GID_TAG_LEN;
	/* another namespace's; or one of before the tags, seen as it was then */
	if (gid_tagged(entry->gid) || !ts_gid_visible(entry, scope))
		return NULL;
	return entry->gid;
}
