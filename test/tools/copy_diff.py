#!/usr/bin/env python3
"""copy_diff.py
	A differential fuzzer of COPY into tcopy tables against COPY into heap
	twins (issue 47), and of queries on both (issue 45), from angles
	test/ext/210_reader_diff.pl and 206_scan_differential.pl do not take:

	- the oracle is Postgres' COPY into a heap table of the same name (in
	  another schema), not tcopy with its reader off: every tcopy run
	  (tcopy.fast_reader on and off, tcopy.copy_workers 0 and 2 with small
	  chunks) must print the heap's rows or the heap's error, SQLSTATE,
	  message, DETAIL and CONTEXT ("COPY t, line N, column c: ...");
	- session settings the converters must honour: DateStyle, TimeZone;
	- more types and typmods: numeric(p,s) with s > p or s = 0,
	  timestamp(p), timestamptz(p), char(1), varchar(1), interval, bytea,
	  jsonb, int4[], a domain with a CHECK, NOT NULL columns;
	- spellings at the edges of each input function (blanks, signs,
	  exponents, overflow, infinities, BC dates, 24:00:00, leap seconds,
	  zone names and offsets, bool prefixes, uuid hyphens and braces);
	- COPY's column list (a subset, reordered), WHERE, FORCE_NULL and
	  FORCE_NOT_NULL on several columns, a dropped column;
	- then queries (filters, aggregates, ORDER BY LIMIT) on the loaded
	  twins, and again as generic plans.

	- each tcopy run also takes, now and then, tcopy.raw_fields off,
	  tcopy.encoder protobuf, a small tcopy.batch_rows, and for parallel
	  runs tcopy.copy_streams or tcopy.copy_map_files off.

	Each COPY runs in its own transaction and the table is truncated
	after it: a tcopy table may meet a key twice in a load out of key
	order only at the COMMIT (README, "What differs from a heap table").
	Which of a duplicate key and a later bad line a COPY reports depends
	on where rows are flushed (README, same place): a duplicate reported
	on one side and an error on a later line on the other is counted
	(dup_order), not failed; so is another duplicate than the heap's
	(dup_which: of several, the COMMIT of a load out of key order reports
	the first in key order).

	--sweep instead loads, for each type, every value its generator makes,
	one COPY of one row each (see sweep()).

	It starts its own tservers and cluster (as root: as user postgres) in
	--dir (the installed tcopy, and build/tserver), runs for --seconds,
	and stops at the first difference unless --keep-going, printing the
	case (DDL, settings, COPY, the input) and keeping it in --dir.  The
	seed (--seed) repeats a run against the same build.

	Usage: test/tools/copy_diff.py --seconds 600 [--seed N] [--keep-going]
	       test/tools/copy_diff.py --sweep [--types 'date timestamptz']
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument('--seconds', type=float, default=60)
ap.add_argument('--seed', type=int, default=None)
ap.add_argument('--dir', default='/tmp/tcopy_copy_diff')
ap.add_argument('--port', type=int, default=55441)
ap.add_argument('--tserver', default=None)
ap.add_argument('--keep-going', action='store_true')
ap.add_argument('--queries', type=int, default=6, help='queries per loaded case')
ap.add_argument('--reuse', action='store_true', help='use a running cluster in --dir')
ap.add_argument('--sweep', action='store_true',
	help='instead: every value the generators make, one COPY each, for each type')
ap.add_argument('--types', default='', help='--sweep: these types (blank-separated), not all')
args = ap.parse_args()

seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1000000007
rng = random.Random(seed)
print(f'seed {seed}', flush=True)

top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
tserver = args.tserver or os.path.join(top, 'build', 'tserver')
bindir = subprocess.check_output(['pg_config', '--bindir'], text=True).strip()
as_root = os.getuid() == 0
D = args.dir
run = os.path.join(D, 'run')


def as_pg(cmd, **kw):
	if as_root:
		cmd = ['runuser', '-u', 'postgres', '--'] + cmd
	return cmd


ts_procs = []


def start():
	shutil.rmtree(D, ignore_errors=True)
	os.makedirs(run)
	if as_root:
		shutil.chown(D, 'postgres')
		shutil.chown(run, 'postgres')
	for n in ('ts1', 'ts2'):
		log = open(os.path.join(run, n + '.log'), 'w')
		ts_procs.append(subprocess.Popen(as_pg([tserver, '--data', f'{run}/{n}', '--listen',
			f'unix:{run}/{n}.sock', '--allow-uid', 'postgres']), stderr=log))
	for n in ('ts1', 'ts2'):
		for _ in range(200):
			if 'tserver ready' in open(os.path.join(run, n + '.log')).read():
				break
			time.sleep(0.05)
		else:
			sys.exit(f'tserver {n} did not start')
	subprocess.check_call(as_pg([f'{bindir}/initdb', '-D', f'{run}/pg', '-U', 'postgres', '-A', 'trust',
		'--no-sync', '-E', 'UTF8', '--locale=C.utf8']), stdout=subprocess.DEVNULL)
	with open(f'{run}/pg/postgresql.conf', 'a') as f:
		f.write(f"port = {args.port}\nunix_socket_directories = '{run}'\nlisten_addresses = ''\n"
			"shared_preload_libraries = 'tcopy'\nmax_connections = 30\nmax_worker_processes = 16\n"
			"max_parallel_workers = 8\nautovacuum = off\nfsync = off\n")
	subprocess.check_call(as_pg([f'{bindir}/pg_ctl', '-D', f'{run}/pg', '-l', f'{run}/pg.log', '-w', 'start']),
		stdout=subprocess.DEVNULL)
	psql(['CREATE EXTENSION tcopy',
		f"CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:{run}/ts1.sock')",
		f"CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:{run}/ts2.sock')",
		'CREATE USER MAPPING FOR PUBLIC SERVER ts', 'CREATE USER MAPPING FOR PUBLIC SERVER ts2',
		'CREATE SCHEMA h', 'CREATE SCHEMA f', 'CREATE SCHEMA p',
		"CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy')",
		'CREATE DOMAIN public.posint AS int4 CHECK (VALUE > 0)'], stop=True)


def stop():
	subprocess.call(as_pg([f'{bindir}/pg_ctl', '-D', f'{run}/pg', '-m', 'immediate', 'stop']),
		stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
	for p in ts_procs:
		p.terminate()
		p.wait()


def psql(cmds, stdin=None, stop=False):
	"""Each of cmds by its own -c; returns (stdout, stderr as a user sees it)."""
	cmd = ['psql', '-XAtq', '-h', run, '-p', str(args.port), '-U', 'postgres', '-d', 'postgres',
		'-v', 'ON_ERROR_STOP=%d' % stop]
	for c in cmds:
		cmd += ['-c', c]
	r = subprocess.run(cmd, input=stdin if stdin is not None else b'', capture_output=True, timeout=300)
	if stop and r.returncode != 0:
		sys.exit('psql failed: %s\n%s' % (cmds, r.stderr.decode('utf8', 'replace')))
	return r.stdout.decode('utf8', 'replace'), messages(r.stderr.decode('utf8', 'replace'))


def messages(err):
	"""psql's stderr without LOCATION lines, psql's prefix and DEBUG/LOG messages."""
	keep = []
	skip = False
	for line in err.split('\n'):
		line = re.sub(r'^psql:[^:]*:\d+: ', '', line)
		m = re.match(r'^(DEBUG|LOG|INFO|NOTICE|WARNING|ERROR|FATAL|PANIC):  ', line)
		if m:
			skip = m.group(1) in ('DEBUG', 'LOG')
		# LOCATION: a source line; SCHEMA NAME: the twins' schemas differ
		if skip or line.startswith('LOCATION:') or line.startswith('SCHEMA NAME:') or line == '':
			continue
		keep.append(line)
	return '\n'.join(keep)


def pick(*xs):
	return rng.choice(xs)


# ---------------------------------------------------------------- types and values

TYPES = ['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'numeric(5,2)', 'numeric(3,5)', 'numeric(4,0)',
	'numeric(20,10)', 'bool', 'date', 'timestamp', 'timestamptz', 'timestamp(2)', 'timestamptz(0)', 'text',
	'varchar(1)', 'varchar(3)', 'char(1)', 'char(4)', 'uuid', 'interval', 'bytea', 'jsonb', 'int4[]', 'mood',
	'posint']


def digits(n):
	return ''.join(rng.choice('0123456789') for _ in range(n))


def int_value(bits):
	lim = 2 ** (bits - 1)
	return pick(str(rng.randrange(-lim, lim)), str(lim - 1), str(-lim), str(lim), str(-lim - 1),
		' %d' % rng.randrange(100), '%d ' % rng.randrange(100), '\t7', '7\t', '+%d' % rng.randrange(100),
		'-0', '+0', '00000000000000000000000012', '-' + '0' * 30 + '5', '1.0', '1e2', '', ' ', '-', '+',
		'0x10', '1_0', str(rng.randrange(-lim, lim)) + 'x', '  -  1', str(lim * 10), '9' * 25,
		str(rng.randrange(100)), str(rng.randrange(-lim, lim)))


def float_value(single):
	return pick('%.3f' % rng.uniform(-1e4, 1e4), repr(rng.uniform(-1, 1)), '%.9g' % rng.uniform(-1e6, 1e6),
		'-0', '0', '-0.0', '+1.5', ' 1.5 ', '1.5 ', '.5', '5.', '.', '-.', '1e10', '1E-5', '1e', '1e+', '1.5e+3',
		'NaN', 'nan', 'NAN', 'Infinity', '-Infinity', '+inf', 'inf', '-INF', 'infinit', 'Infinityx',
		'1e39', '3.4028235e38', '3.4028236e38', '3.40282357e38', '1.17549435e-38', '1e-45', '1e-46', '1e-50',
		'1e308', '1.7976931348623157e308', '1.8e308', '4.9e-324', '2e-324', '1e-400', '0.1', '16777217',
		'9007199254740993', '0.' + '0' * 40 + '1', '1' + '0' * 40, '123456789012345678', '0.30000000000000004',
		'1,5', '', '0x1p3', '  ', '1.0.0', '--1', '%d' % rng.randrange(-1000, 1000),
		'%.*f' % (rng.randrange(0, 12), rng.uniform(-100, 100)), '1' * 16 + '.5', '9' * 15, '9' * 16)


def numeric_value():
	return pick('%.2f' % rng.uniform(-1000, 1000), '%.5f' % rng.uniform(-1, 1), '%.1f' % rng.uniform(-1e5, 1e5),
		'0.01234', '0.00123', '0.009995', '0.00999', '-0.00999', '999.995', '999.994', '-999.999', '9999',
		'9999.4', '9999.5', '-0', '-0.0', '+0.5', ' 1.5', '1.5 ', '.5', '5.', '.', '1e3', '1E-3', '1e-1000',
		'1e1001', 'NaN', 'nan', ' NaN ', 'Infinity', '-Infinity', 'inf', '-inf', '+Infinity', '1' * 25,
		'0.' + '0' * 20 + '1', '12345.6789012345', '00001.1000', '-00000', '0000.0000', '1,5', '', '1e',
		'0x1F', '1_000', '%d' % rng.randrange(-10 ** 6, 10 ** 6), '%.10f' % rng.uniform(-1e9, 1e9),
		'99999999.9999999999', '0.99999999995', '-1e-10', '1.00000000005')


def date_part():
	y = pick(1, 2, 99, 100, 1582, 1999, 2000, 2024, 2100, 4713, 5874897, 9999, 10000)
	return y, rng.randint(1, 12), rng.randint(1, 31)


def date_value():
	y, m, d = date_part()
	return pick('%04d-%02d-%02d' % (y, m, d), '%04d-%02d-%02d' % (y, m, min(d, 28)), '%d-%d-%d' % (y, m, d),
		'%02d/%02d/%04d' % (m, min(d, 28), y), '%02d/%02d/%04d' % (min(d, 12), min(m, 12), y),
		'%02d.%02d.%04d' % (min(d, 28), m, y), '%04d%02d%02d' % (y, m, min(d, 28)),
		'2024-02-29', '2023-02-29', '2000-02-29', '1900-02-29', '2024-04-31', '0000-01-01', '0001-01-01',
		'0001-01-01 BC', '4714-11-24 BC', '4714-11-23 BC', '5874897-12-31', '5874898-01-01', 'epoch',
		'infinity', '-infinity', ' 2024-01-01', '2024-01-01 ', '2024-01-01 00:00', 'Jan 8 1999', '8 Jan 1999',
		'1999-Jan-08', 'J2451187', 'allballs', '99-01-08', '08-01-99', '2024-1-2', '2024-01-02BC', '',
		'2024-13-01', '2024-00-10', '2024-01-00', '2024/01/02', '2024-01-02T00:00:00', '1/2/3')


def time_part():
	return pick('%02d:%02d:%02d' % (rng.randrange(24), rng.randrange(60), rng.randrange(60)),
		'%02d:%02d:%02d.%s' % (rng.randrange(24), rng.randrange(60), rng.randrange(60), digits(rng.randint(1, 8))),
		'24:00:00', '24:00:00.000001', '23:59:60', '23:59:60.5', '23:59:59.9999995', '23:59:59.999999',
		'12:00', '12:60:00', '25:00:00', '7:5:3', '00:00:00.', '12:00:00 PM', '12:00:00 am', '10:00:00.5555555')


def zone():
	return pick('+00', '-00', '+05', '-05', '+05:30', '-03:45', '+0530', '+14', '-14', '+15', '-15', '+15:59',
		'+16', '+14:00:01', '+5', ' UTC', 'Z', ' Europe/Paris', ' America/New_York', ' EST', ' PST8PDT',
		' Asia/Kolkata', ' NoSuchZone', '+05:60', ' +01', '+01:30:30', ' GMT+3')


def timestamp_value(tz):
	y, m, d = date_part()
	date = pick('%04d-%02d-%02d' % (y, m, min(d, 28)), '2024-02-29', '2024-03-10', '2024-11-03',
		'0001-01-01', '4714-11-24', '294276-12-31', '294277-01-01', '%04d-%02d-%02d' % (y, m, d))
	t = time_part()
	base = pick('%s %s' % (date, t), '%s %s' % (date, t), '%sT%s' % (date, t), '%s  %s' % (date, t),
		'%s %s BC' % (date, t), date, 'epoch', 'infinity', '-infinity', 'now' if False else 'epoch',
		'2024-01-01 00:00:00', ' 2024-01-01 00:00:00', '2024-01-01 00:00:00 ', '2024-03-10 02:30:00',
		'2024-11-03 01:30:00', '2024-06-30 23:59:60', 'Jan 8 1999 04:05:06', '1999-01-08 04:05:06 -8:00',
		'2000-01-01 00:00:00.5', '', '2024-01-01 00:00:00.', '2024-01-01 00:00:00.1234567')
	if tz or rng.random() < 0.2:
		return base + zone() if rng.random() < 0.7 else base
	return base


def uuid_value():
	h = '%032x' % rng.getrandbits(128)
	u = '%s-%s-%s-%s-%s' % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
	return pick(u, u, u.upper(), '{%s}' % u, h, '{' + h + '}', '-'.join(h[i:i + 4] for i in range(0, 32, 4)),
		u[:35], u + '0', u[:35] + 'g', ' ' + u, u + ' ', '{' + u, u + '}', h[:8] + '-' + h[8:],
		'-' + u, '', h[:31], u.replace('-', '--', 1))


def bool_value():
	return pick('t', 'f', 'true', 'false', 'TRUE', 'False', 'T', 'F', 'y', 'n', 'ye', 'yes', 'no', 'on', 'of',
		'off', 'o', '1', '0', '01', '10', ' t', 't ', '  true ', 'tru', 'tr', 'fa', 'fals', 'falsee', '', 'nope',
		'On', 'OFF', 'Y', 'N', '\tf')


def text_value(maxlen):
	alphabet = 'abcXYZ 09,;|"\'\\.\u00e9\u263a\U0001f600\u0301'
	n = pick(0, 1, 2, 3, 4, 5, 8, 30) if maxlen is None else pick(0, 1, maxlen, maxlen + 1, maxlen + 3)
	s = ''.join(rng.choice(alphabet) for _ in range(n))
	if maxlen is not None and rng.random() < 0.3:
		s = s[:maxlen] + ' ' * rng.randint(1, 3)	# blanks past n are cut, others refused
	if rng.random() < 0.05:
		s = 'x' * pick(5000, 70000)
	return s


def value_of(t):
	if t in ('int2', 'int4', 'int8'):
		return int_value({'int2': 16, 'int4': 32, 'int8': 64}[t])
	if t in ('float4', 'float8'):
		return float_value(t == 'float4')
	if t.startswith('numeric'):
		return numeric_value()
	if t == 'bool':
		return bool_value()
	if t == 'date':
		return date_value()
	if t.startswith('timestamptz'):
		return timestamp_value(True)
	if t.startswith('timestamp'):
		return timestamp_value(False)
	if t == 'uuid':
		return uuid_value()
	if t == 'text':
		return text_value(None)
	m = re.match(r'(?:varchar|char)\((\d+)\)', t)
	if m:
		return text_value(int(m.group(1)))
	if t == 'interval':
		return pick('1 day', '1 mon 2 days 03:04:05', '-1 year', 'P1Y2M', '1.5 hours', '@ 1 minute ago', 'x',
			'178956970 years', '178956971 years', '')
	if t == 'bytea':
		return pick('\\x', '\\x0102', '\\xabc', 'abc', '\\001', '\\\\', '\\x' + '%08x' % rng.getrandbits(32), '\\')
	if t == 'jsonb':
		return pick('{}', '[1,2]', '{"a": 1, "a": 2}', '"x"', '1e1000', 'nul', '', '{"\u00e9": null}', '[')
	if t == 'int4[]':
		return pick('{}', '{1,2}', '{1,NULL}', '{{1},{2}}', '{1', '{2147483648}', '[0:1]={1,2}', ' {1} ')
	if t == 'mood':
		return pick('sad', 'ok', 'happy', 'Happy', '', 'ok ')
	if t == 'posint':
		return pick('1', '0', '-1', '5', 'x', '2147483647')
	raise ValueError(t)


# ---------------------------------------------------------------- encoding

def encode_field(o, v):
	if v is None:
		return o['null']
	if o['format'] == 'text':
		v = v.replace('\\', '\\\\').replace('\n', '\\n').replace('\r', '\\r')
		if o['delim'] == '\t':
			v = v.replace('\t', '\\t')
		else:
			v = v.replace(o['delim'], '\\' + o['delim'])
		if rng.random() < 0.03:
			v = pick('\\x41', '\\101', '\\b', '\\v', '\\303\\251', '\\0', '\\400', '\\x', '\\xff', '\\N') + v
		return v
	q, e = o['quote'], o['escape']
	needs = v == o['null'] or o['delim'] in v or '\n' in v or '\r' in v or q in v or rng.random() < 0.2 or \
		(v.strip() != v and rng.random() < 0.5)
	if not needs:
		return v
	if e == q:
		v = v.replace(q, q + q)
	else:
		v = ''.join(e + c if c in (q, e) else c for c in v)
	return q + v + q


def sql_literal(s):
	return "E'" + s.replace('\\', '\\\\').replace("'", "''").replace('\t', '\\t') + "'"


# ---------------------------------------------------------------- one case

counts = {'cases': 0, 'runs': 0, 'loaded': 0, 'errors': 0, 'queries': 0, 'diffs': 0, 'heap_skipped': 0, 'dup_order': 0, 'dup_which': 0, 'query_errors': 0}
first_lines = {}


def report(title, case, a, b, extra=''):
	counts['diffs'] += 1
	path = os.path.join(D, 'diff_%d_%d.txt' % (seed, counts['diffs']))
	with open(path, 'w') as f:
		f.write('%s\nseed %d case %d\n%s\n--- heap\n%s\n--- tcopy (%s)\n%s\n' % (title, seed, counts['cases'],
			case, a, extra, b))
	print('DIFFERENCE (%s), kept in %s:\n%s\n--- heap:\n%s\n--- tcopy (%s):\n%s' % (title, path, case,
		a[:3000], extra, b[:3000]), flush=True)
	if not args.keep_going:
		stop()
		sys.exit(1)


KEY_TYPES = ['int8', 'int8', 'int8', 'int4', 'text', 'numeric', 'float8', 'float4', 'date', 'timestamptz', 'uuid',
	'char(3)', 'varchar(5)']


def key_value(t, r):
	"""Row r's key of type t: distinct values, now and then one equal to another by btree but spelt otherwise."""
	if r > 1 and rng.random() < 0.01:
		r -= 1
		if t in ('int8', 'int4'):
			return pick(' %d' % r, '+%d' % r, '0%d' % r)
	if t in ('int8', 'int4'):
		return str(r)
	if t == 'numeric':
		return pick(str(r), str(r), '%d.0' % r, '%d.000' % r, '-0' if r == 1 else str(r))
	if t in ('float8', 'float4'):
		return pick(str(r), str(r), '%d.0' % r, '%de0' % r)
	if t == 'text':
		return 'k%d' % r
	if t in ('char(3)', 'varchar(5)'):
		return pick('%d' % r, '%d' % r, '%d ' % r)[:3 if t == 'char(3)' else 5]
	if t == 'date':
		return '%04d-%02d-%02d' % (2000 + r // 300, 1 + r // 28 % 10, 1 + r % 28)
	if t == 'timestamptz':
		return pick('2024-01-01 00:00:%02d+00' % (r % 60), '2024-01-01 01:00:%02d+01' % (r % 60)) \
			.replace('2024-01-01', '%04d-01-01' % (2000 + r // 60))
	if t == 'uuid':
		return '00000000-0000-0000-0000-%012x' % r
	raise ValueError(t)


def both_dup(a, b):
	"""Whether both errors are a duplicate key (maybe another one)."""
	return all(re.match(r'ERROR:  23505:', e) for e in (a, b))


def dup_vs_other(a, b):
	"""
	Whether one of two errors is a duplicate key and the other another
	error on a later line: the two a COPY may meet in either order.
	"""
	def first(e):
		"""The first error's SQLSTATE, and its COPY line (None: not given)."""
		m = re.search(r'^ERROR:  (\w+):', e, re.M)
		if not m:
			return None, None
		rest = e[m.end():].split('\nERROR:')[0]
		line = re.search(r'^CONTEXT:  COPY \w+, line (\d+)', rest, re.M)
		return m.group(1), int(line.group(1)) if line else None

	(ca, la), (cb, lb) = first(a), first(b)
	if None in (ca, cb) or (ca == '23505') == (cb == '23505'):
		return False
	dup_line, other_line = (la, lb) if ca == '23505' else (lb, la)
	return dup_line is None or other_line is None or dup_line < other_line


def one_case(n):
	ncols = rng.randint(1, 5)
	cols = [pick(*TYPES) for _ in range(ncols)]
	notnull = [rng.random() < 0.1 for _ in cols]
	coldefs = ['c%d %s%s' % (i + 1, t, ' NOT NULL' if nn else '') for i, (t, nn) in enumerate(zip(cols, notnull))]
	dropped = rng.random() < 0.1
	partitioned = rng.random() < 0.15
	key_type = 'int8' if partitioned else pick(*KEY_TYPES)
	defs = ['k %s NOT NULL' % key_type] + (['gone int4'] if dropped else []) + coldefs
	ddl = ['DROP SCHEMA IF EXISTS f CASCADE', 'DROP SCHEMA IF EXISTS h CASCADE', 'CREATE SCHEMA f', 'CREATE SCHEMA h']
	if partitioned:
		# the second partition made alone, its columns in another order, then attached
		upper = pick('40', 'MAXVALUE')
		rev = list(reversed(defs))
		ddl += ['CREATE TABLE f.t (%s) PARTITION BY RANGE (k)' % ', '.join(defs),
			"CREATE FOREIGN TABLE f.t1 PARTITION OF f.t FOR VALUES FROM (MINVALUE) TO (20) SERVER ts OPTIONS (key 'k')",
			"CREATE FOREIGN TABLE f.t2 (%s) SERVER ts2 OPTIONS (key 'k')" % ', '.join(rev),
			'ALTER TABLE f.t ATTACH PARTITION f.t2 FOR VALUES FROM (20) TO (%s)' % upper,
			'CREATE TABLE h.t (%s) PARTITION BY RANGE (k)' % ', '.join(defs),
			'CREATE TABLE h.t1 PARTITION OF h.t FOR VALUES FROM (MINVALUE) TO (20)',
			'CREATE TABLE h.t2 (%s)' % ', '.join(rev),
			'ALTER TABLE h.t ATTACH PARTITION h.t2 FOR VALUES FROM (20) TO (%s)' % upper]
		if dropped:
			ddl += ['ALTER TABLE f.t DROP COLUMN gone', 'ALTER TABLE h.t DROP COLUMN gone']
	else:
		ddl += ["CREATE FOREIGN TABLE f.t (%s) SERVER %s OPTIONS (key 'k')" % (', '.join(defs), pick('ts', 'ts2')),
			'CREATE TABLE h.t (%s, CONSTRAINT t_key PRIMARY KEY (k))' % ', '.join(defs)]
		if dropped:
			ddl += ['ALTER FOREIGN TABLE f.t DROP COLUMN gone', 'ALTER TABLE h.t DROP COLUMN gone']
	psql(ddl, stop=True)

	o = {'format': pick('text', 'csv')}
	if o['format'] == 'text':
		o['delim'] = pick('\t', '\t', ',', '|')
		o['null'] = pick('\\N', '\\N', 'NULL', '')
	else:
		o['delim'] = pick(',', ',', ';', '\t')
		o['null'] = pick('', '', 'NULL', '\\N')
		o['quote'] = pick('"', '"', "'")
		o['escape'] = pick(o['quote'], o['quote'], '\\')
	o['header'] = pick('false', 'false', 'false', 'true', 'match')
	# the column list: all, or k and a permutation of a subset
	names = ['k'] + ['c%d' % (i + 1) for i in range(ncols)]
	if rng.random() < 0.3:
		sub = [c for c in names[1:] if rng.random() < 0.7]
		rng.shuffle(sub)
		listed = ['k'] + sub
		if rng.random() < 0.3:
			rng.shuffle(listed)
		collist = ' (%s)' % ', '.join(listed)
	else:
		listed = names
		collist = ''
	opts = ['FORMAT ' + o['format'], 'DELIMITER ' + sql_literal(o['delim']), 'NULL ' + sql_literal(o['null']),
		'HEADER ' + o['header']]
	if o['format'] == 'csv':
		opts += ['QUOTE ' + sql_literal(o['quote']), 'ESCAPE ' + sql_literal(o['escape'])]
		others = [c for c in listed if c != 'k']
		for opt in ('FORCE_NULL', 'FORCE_NOT_NULL'):
			if others and rng.random() < 0.2:
				opts.append('%s (%s)' % (opt, ', '.join(rng.sample(others, rng.randint(1, len(others))))))
	where = ''
	if rng.random() < 0.1:
		where = pick(' WHERE k IS NOT NULL', ' WHERE c1 IS NOT NULL')
		if key_type in ('int4', 'int8'):
			where = pick(where, ' WHERE k % 3 <> 1', ' WHERE k > 5')

	settings = []
	if rng.random() < 0.5:
		settings.append('SET datestyle = ' + pick("'ISO, MDY'", "'ISO, DMY'", "'SQL, DMY'", "'German'",
			"'Postgres, YMD'", "'SQL, MDY'"))
	if rng.random() < 0.5:
		settings.append('SET timezone = ' + pick("'UTC'", "'America/New_York'", "'Asia/Kolkata'",
			"'Australia/Lord_Howe'", "'Pacific/Kiritimati'", "'-03:30'", "'PST8PDT'"))

	# the rows: unique keys (the tcopy table keeps the last of a key)
	bad_rows = rng.random() < 0.35
	# with edge values, few rows: COPY stops at the first refused; or
	# many rows and an edge value or two (which line a parallel COPY's
	# error names)
	sparse = not bad_rows and rng.random() < 0.3
	nrows = pick(1, 1, 2, 3, 5) if bad_rows else rng.randint(500, 4000) if sparse else pick(1, 2, 3, 5, 10, 40, 300)
	sparse_at = {rng.randint(1, nrows) for _ in range(rng.randint(1, 3))} if sparse else set()
	lines = []
	if o['header'] != 'false':
		hdr = list(listed)
		if rng.random() < 0.15:
			hdr = hdr[::-1] if len(hdr) > 1 else ['kk']
		lines.append(o['delim'].join(encode_field(o, h) for h in hdr))
	idx = {c: i for i, c in enumerate(names)}
	for r in range(1, nrows + 1):
		vals = []
		for c in listed:
			if c == 'k':
				vals.append(key_value(key_type, r))
				continue
			t = cols[idx[c] - 1]
			if rng.random() < 0.1:
				vals.append(None)
			elif (bad_rows and rng.random() < 0.5) or (r in sparse_at and rng.random() < 0.7) or \
					(not sparse and rng.random() < 0.02):
				vals.append(value_of(t))
			else:
				vals.append(safe_value(t))
		line = o['delim'].join(encode_field(o, v) for v in vals)
		lines.append(line)
	# line-level edits
	if rng.random() < 0.2 and len(lines) > 1:
		i = rng.randrange(1 if o['header'] != 'false' else 0, len(lines))
		what = rng.random()
		if what < 0.3:
			lines[i] += o['delim'] + 'extra'
		elif what < 0.6:
			lines[i] = lines[i].rsplit(o['delim'], 1)[0]
		elif what < 0.7:
			lines.insert(i, '\\.')
		elif what < 0.8:
			lines.insert(i, '')
		else:
			lines[i] = lines[i] + pick('\r', '\x00', '\udcff', '\\')
	eol = pick('\n', '\n', '\n', '\r\n', '\r')
	data = eol.join(lines) + (eol if rng.random() < 0.9 else '')
	raw = data.encode('utf8', 'surrogateescape')
	stdin = rng.random() < 0.3
	path = os.path.join(D, 'in.dat')
	with open(path, 'wb') as f:
		f.write(raw)
	os.chmod(path, 0o644)
	src = 'STDIN' if stdin else "'%s'" % path
	copy = 'COPY t%s FROM %s (%s)%s' % (collist, src, ', '.join(opts), where)
	rows_q = "SELECT CASE WHEN length(r) > 300 THEN md5(r) ELSE r END FROM (SELECT t::text AS r, k FROM t) s ORDER BY k"
	case_text = '\n'.join(ddl[4:] + settings + [copy]) + '\n--- input (%s):\n%r' % (path, raw[:4000])

	# each COPY is its own transaction: a tcopy table may find a key
	# twice in a load out of key order at the COMMIT (README, "What
	# differs from a heap table"), which then raises the COPY's error
	def load(schema, extra):
		return psql(settings + ['SET search_path = %s, public' % schema] + extra +
			['\\set VERBOSITY verbose', copy, rows_q, 'SELECT count(*) - count(DISTINCT k) FROM t',
			 'TRUNCATE t'], stdin=raw if stdin else None)

	heap_out, heap_err = load('h', [])
	heap_lines = heap_out.rstrip('\n').split('\n')
	# a key twice (line edits): the tcopy table keeps one, the heap both
	dup = len(heap_lines) >= 1 and heap_lines[-1].strip() not in ('0', '')
	heap_rows = '\n'.join(heap_lines[:-1])
	counts['cases'] += 1
	if 'ERROR' in heap_err:
		counts['errors'] += 1
		fl = re.sub(r'"[^"]*"', '"..."', heap_err.split('\n')[0])
		first_lines[fl] = first_lines.get(fl, 0) + 1
	else:
		counts['loaded'] += 1
	if dup:
		counts['heap_skipped'] += 1
		return
	for fast in ('on', 'off'):
		for workers in (0, 2):
			extra = ['SET tcopy.fast_reader = ' + fast, 'SET tcopy.copy_workers = %d' % workers]
			if workers:
				extra += ['SET tcopy.copy_parallel_threshold = 0',
					'SET tcopy.copy_chunk_bytes = %d' % rng.randint(64, 3000)]
			# the other paths a COPY may take, each now and then
			extra.append("SET tcopy.simd = '%s'" % pick('auto', 'auto', 'sse2', 'scalar'))
			if rng.random() < 0.2:
				extra.append('SET tcopy.raw_fields = off')
			if rng.random() < 0.2:
				extra.append("SET tcopy.encoder = 'protobuf'")
			if rng.random() < 0.2:
				extra.append('SET tcopy.batch_rows = %d' % pick(1, 2, 7, 100))
			if workers and rng.random() < 0.3:
				extra.append('SET tcopy.copy_streams = off')
			if workers and rng.random() < 0.3:
				extra.append('SET tcopy.copy_map_files = off')
			out, err = load('f', extra)
			counts['runs'] += 1
			rows = '\n'.join(out.rstrip('\n').split('\n')[:-1])
			if err != heap_err and both_dup(heap_err, err):
				# of several keys twice, the COMMIT of a load out of key
				# order reports the first in key order, a heap table the
				# first in the input (README)
				counts['dup_which'] += 1
				continue
			if err != heap_err and dup_vs_other(heap_err, err):
				# a key twice and another error: which one COPY meets first
				# depends on when rows are flushed (a heap's multi-insert
				# buffer checks keys every 1000 rows; a parallel COPY's
				# workers send their chunks' batches)
				counts['dup_order'] += 1
				continue
			if err != heap_err or rows != heap_rows:
				report('COPY', case_text, heap_rows + '\n' + heap_err, rows + '\n' + err, '; '.join(extra))
				return
	if 'ERROR' not in heap_err and args.queries:
		run_queries(cols, settings, copy, raw if stdin else None, case_text, key_type)


def safe_value(t):
	"""A value the type's input takes, in the common spelling."""
	if t == 'int2':
		return str(rng.randrange(-32768, 32768))
	if t in ('int4', 'posint'):
		return str(rng.randrange(1, 2 ** 31))
	if t == 'int8':
		return str(rng.randrange(-2 ** 63, 2 ** 63))
	if t in ('float4', 'float8'):
		return pick('%.2f' % rng.uniform(-100, 100), '-0', 'NaN', 'Infinity', '-Infinity', '0', '1.5', '-2.5')
	if t == 'numeric(3,5)':
		return pick('0.00123', '-0.00999', '0', '0.005')
	if t.startswith('numeric'):
		return pick('%.2f' % rng.uniform(-99, 99), '0', '-0', '1.50', 'NaN', '12', '-3.5')
	if t == 'bool':
		return pick('t', 'f', 'true', 'false')
	if t == 'date':
		return '%04d-%02d-%02d' % (rng.randint(1, 2999), rng.randint(1, 12), rng.randint(1, 28))
	if t.startswith('timestamp'):
		s = '%04d-%02d-%02d %02d:%02d:%02d' % (rng.randint(1900, 2100), rng.randint(1, 12), rng.randint(1, 28),
			rng.randrange(24), rng.randrange(60), rng.randrange(60))
		if rng.random() < 0.5:
			s += '.%s' % digits(rng.randint(1, 6))
		if t.startswith('timestamptz'):
			s += pick('', '+00', '-05', '+05:30', '+14')
		return s
	if t == 'uuid':
		h = '%032x' % rng.getrandbits(128)
		return '%s-%s-%s-%s-%s' % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
	if t == 'text':
		return text_value(None)
	m = re.match(r'(?:varchar|char)\((\d+)\)', t)
	if m:
		return text_value(None)[:int(m.group(1))]
	return value_of(t)


# ---------------------------------------------------------------- queries

def const_of(t):
	if t in ('int2', 'int4', 'int8', 'posint'):
		return pick('0', '1', '-1', '100', '2147483647', '-32768', '9223372036854775807', 'NULL', '1.5', "'7'")
	if t in ('float4', 'float8'):
		return pick("'NaN'::%s" % t, "'-0'::%s" % t, "'Infinity'::%s" % t, '0', '1.5', '-2.5', '0.1', 'NULL')
	if t.startswith('numeric'):
		return pick("'NaN'::numeric", '0', '1.5', '1.50', '-0.00999', '12', 'NULL', "'Infinity'::numeric")
	if t == 'bool':
		return pick('true', 'false', 'NULL')
	if t == 'date':
		return pick("'2000-01-01'::date", "'infinity'::date", "'1500-06-01'", 'NULL')
	if t.startswith('timestamp'):
		return pick("'2000-01-01 12:00'::%s" % t.split('(')[0], "'-infinity'::%s" % t.split('(')[0],
			"'2024-01-01'::date", 'NULL')
	if t == 'uuid':
		return pick("'80000000-0000-0000-0000-000000000000'", 'NULL')
	if t in ('text', 'mood') or t.startswith('varchar') or t.startswith('char'):
		return pick("'a'", "'abc'", "''", "'\u00e9'", "'a '", "'x'::char(2)", 'NULL')
	return None


def param_type(t):
	"""The type of a parameter compared with a column of type t."""
	return {'posint': 'int4', 'mood': 'text'}.get(t, re.sub(r'\(.*\)', '', t))


def run_queries(cols, settings, copy, stdin, case_text, key_type):
	"""Load both twins again, committed, and compare random queries on them."""
	for schema in ('h', 'f'):
		out, err = psql(settings + ['SET search_path = %s, public' % schema, copy], stdin=stdin)
		if 'ERROR' in err:
			return
	types = {'k': key_type}
	types.update({'c%d' % (i + 1): t for i, t in enumerate(cols)})
	numeric_cols = [(c, t) for c, t in types.items() if re.match(r'(int[248]|float[48]|numeric.*|posint)$', t)]
	cmp_cols = [(c, t) for c, t in types.items() if const_of(t) is not None]
	for _ in range(args.queries):
		params = []		# (the constant, its type) of each $n

		def const(t):
			v = const_of(t)
			params.append((v, param_type(t)))
			return '\x01%d\x02' % len(params)

		conds = []
		for _ in range(rng.randint(0, 3)):
			if not cmp_cols:
				break
			c, t = rng.choice(cmp_cols)
			op = pick('=', '<>', '<', '<=', '>', '>=', 'IS NULL', 'IS NOT NULL', 'IN', 'NOT IN', 'IS DISTINCT FROM',
				'BETWEEN', '= ANY', 'NOT')
			if op.startswith('IS ') and 'NULL' in op:
				conds.append('%s %s' % (c, op))
			elif op.endswith('IN'):
				conds.append('%s %s (%s)' % (c, op, ', '.join(const(t) for _ in range(rng.randint(1, 4)))))
			elif op == 'BETWEEN':
				conds.append('%s BETWEEN %s AND %s' % (c, const(t), const(t)))
			elif op == '= ANY':
				conds.append('%s = ANY (ARRAY[%s]::%s[])' % (c, ', '.join(const(t) for _ in range(rng.randint(1, 3))),
					param_type(t)))
			elif op == 'NOT':
				conds.append('NOT (%s %s %s)' % (c, pick('=', '<', '>='), const(t)))
			else:
				conds.append('%s %s %s' % (c, op, const(t)))
		where = (' WHERE ' + pick(' AND ', ' OR ').join(conds)) if conds else ''
		kind = rng.random()
		if kind < 0.5 and numeric_cols:
			c, t = rng.choice(numeric_cols)
			aggs = ['count(*)', 'count(%s)' % c, 'sum(%s)' % c, 'avg(%s)' % c, 'min(%s)' % c, 'max(%s)' % c,
				'count(DISTINCT %s)' % c]
			sel = ', '.join(rng.sample(aggs, rng.randint(1, len(aggs))))
			grp = ''
			grp_cols = [c2 for c2, t2 in types.items() if t2 in ('int2', 'int4', 'int8', 'bool', 'date',
				'text', 'varchar(3)', 'timestamp', 'timestamptz')]
			if grp_cols and rng.random() < 0.5:
				g = rng.choice(grp_cols)
				having = pick('', '', ' HAVING count(*) > 1', ' HAVING max(%s) IS NOT NULL' % c)
				grp = ' GROUP BY %s%s ORDER BY %s' % (g, having, g)
				sel = g + ', ' + sel
			q = 'SELECT %s FROM t%s%s' % (sel, where, grp)
		else:
			oc = rng.choice(['k'] * 3 + [c2 for c2, t2 in cmp_cols])
			q = 'SELECT * FROM t%s ORDER BY %s %s%s LIMIT %d%s' % (where, oc, pick('ASC', 'DESC', 'DESC NULLS LAST',
				'ASC NULLS FIRST'), '' if oc == 'k' else ', k', rng.randint(0, 8), pick('', '', ' OFFSET 2'))
		generic = rng.random() < 0.4
		if generic:
			# every constant a parameter of a generic plan
			typed = ', '.join(pt for _, pt in params)
			body = re.sub('\x01(\\d+)\x02', lambda m: '$' + m.group(1), q)
			vals = ', '.join(v for v, _ in params)
			cmds = ['SET plan_cache_mode = force_generic_plan',
				'PREPARE q%s AS %s' % ('(%s)' % typed if params else '', body),
				'EXECUTE q%s' % ('(%s)' % vals if params else ''),
				'EXECUTE q%s' % ('(%s)' % vals if params else '')]
			shown = '%s\n%s' % (cmds[1], cmds[2])
		else:
			body = re.sub('\x01(\\d+)\x02', lambda m: params[int(m.group(1)) - 1][0], q)
			cmds = [body]
			shown = body
		res = {}
		for schema in ('h', 'f'):
			pre = settings + ['SET search_path = %s, public' % schema, 'SET enable_partitionwise_aggregate = on']
			if rng.random() < 0.3:
				pre += ['SET parallel_setup_cost = 0', 'SET parallel_tuple_cost = 0',
					'SET min_parallel_table_scan_size = 0']
			res[schema] = psql(pre + cmds)
		counts['queries'] += 1
		if 'ERROR' in res['h'][1]:
			counts['query_errors'] += 1
			if os.environ.get('COPY_DIFF_SHOW_QUERY_ERRORS'):
				print(shown, res['h'][1].split('\n')[0])
		if res['h'] != res['f']:
			report('query', case_text + '\n--- query%s:\n%s' % (' (generic plan)' if generic else '', shown),
				'\n'.join(res['h']), '\n'.join(res['f']))
	psql(['TRUNCATE h.t', 'TRUNCATE f.t'], stop=True)


# ---------------------------------------------------------------- sweep

def psql_script(script):
	"""A psql script (COPY data inline) in one session: stdout then stderr, as a user sees them."""
	cmd = ['psql', '-XAtq', '-h', run, '-p', str(args.port), '-U', 'postgres', '-d', 'postgres', '-f', '-']
	r = subprocess.run(cmd, input=script.encode('utf8', 'surrogateescape'), capture_output=True, timeout=3600)
	err = '\n'.join(re.sub(r'^psql:<stdin>:\d+: ', '', line) for line in r.stderr.decode('utf8', 'replace').split('\n'))
	return r.stdout.decode('utf8', 'replace') + messages(err)


def sweep():
	"""
	For each type, every distinct value of 3000 draws of its generator (but
	those with a line end, NUL or backslash, which a psql script cannot
	hold as they are), each loaded alone (one COPY of one row), in text
	and csv, under the default settings and under DateStyle SQL, DMY and
	TimeZone America/New_York: the heap's rows and errors against the
	tcopy table's with tcopy's reader, Postgres' reader, and two parallel
	workers.
	"""
	types = args.types.split() or TYPES
	for t in types:
		vals = set()
		for _ in range(3000):
			v = value_of(t)
			if not any(c in v for c in '\n\r\x00\\'):
				vals.add(v)
		vals = sorted(vals)
		psql(['DROP SCHEMA IF EXISTS f CASCADE', 'DROP SCHEMA IF EXISTS h CASCADE', 'CREATE SCHEMA f', 'CREATE SCHEMA h',
			'CREATE TABLE h.s (k int8, v %s)' % t,
			"CREATE FOREIGN TABLE f.s (k int8, v %s) SERVER ts OPTIONS (key 'k')" % t], stop=True)
		for fmt in ('text', 'csv'):
			for settings in ([], ["SET datestyle = 'SQL, DMY'", "SET timezone = 'America/New_York'"]):
				def script(schema, extra):
					lines = ['\\set VERBOSITY verbose'] + [c + ';' for c in
						['SET search_path = %s, public' % schema] + settings + extra]
					for i, v in enumerate(vals):
						if fmt == 'csv':
							quote = ',' in v or '"' in v or v == '' or v.strip() != v
							field = '"' + v.replace('"', '""') + '"' if quote else v
						else:
							field = v.replace('\t', '\\t')
						lines += ['BEGIN;', 'COPY s FROM STDIN (FORMAT %s);' % fmt,
							'%d%s%s' % (i, ',' if fmt == 'csv' else '\t', field), '\\.',
							"SELECT 'row', s::text FROM s;", 'ROLLBACK;']
					return '\n'.join(lines) + '\n'
				heap = psql_script(script('h', []))
				for extra in (['SET tcopy.fast_reader = on'], ['SET tcopy.fast_reader = off'],
						['SET tcopy.copy_workers = 2', 'SET tcopy.copy_parallel_threshold = 0']):
					got = psql_script(script('f', extra))
					counts['runs'] += len(vals)
					if got != heap:
						import difflib
						d = '\n'.join(list(difflib.unified_diff(heap.split('\n'), got.split('\n'), lineterm='', n=2))[:60])
						report('sweep', 'type %s, FORMAT %s, %s' % (t, fmt, '; '.join(settings + extra)), d, '', '')
		counts['cases'] += len(vals)
		print('type %s: %d values' % (t, len(vals)), flush=True)


def on_term(signum, frame):
	raise SystemExit('signal %d' % signum)


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)
if not args.reuse:
	start()
start_time = time.time()
try:
	if args.sweep:
		sweep()
	while not args.sweep and time.time() - start_time < args.seconds:
		one_case(counts['cases'])
finally:
	print('seed %d: %s' % (seed, ', '.join('%s %d' % kv for kv in counts.items())), flush=True)
	for fl, c in sorted(first_lines.items(), key=lambda kv: -kv[1])[:25]:
		print('  %5d x %s' % (c, fl))
	if not args.reuse:
		stop()
sys.exit(1 if counts['diffs'] else 0)
