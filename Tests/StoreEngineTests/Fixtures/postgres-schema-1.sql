-- A database as the first released PostgreSQL schema (migration "1") left it, with one account's
-- data in every table: written by PostgresOrderStore at b0e0773 (orders, a tombstone, a pending job,
-- the stream cursor, a dead letter, a dedupe key, the owner, the change log) and dumped with pg_dump.
-- Frozen: the forward-migration test loads it and opens it with today's store. Never regenerate it.
--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: orderlive_change_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_change_log (
    account text NOT NULL,
    floor bigint NOT NULL
);


--
-- Name: orderlive_dead_letter; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_dead_letter (
    id bigint NOT NULL,
    account text NOT NULL,
    kind text NOT NULL,
    order_id text,
    raw text NOT NULL,
    reason text NOT NULL,
    attempts bigint NOT NULL,
    created_at double precision NOT NULL
);


--
-- Name: orderlive_dead_letter_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.orderlive_dead_letter_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: orderlive_dead_letter_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.orderlive_dead_letter_id_seq OWNED BY public.orderlive_dead_letter.id;


--
-- Name: orderlive_dedupe_key; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_dedupe_key (
    account text NOT NULL,
    id text NOT NULL,
    response text NOT NULL,
    accepted_at double precision NOT NULL
);


--
-- Name: orderlive_job; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_job (
    id bigint NOT NULL,
    account text NOT NULL,
    kind text NOT NULL,
    order_id text,
    version bigint,
    payload text,
    source text NOT NULL,
    attempts bigint DEFAULT 0 NOT NULL,
    not_before double precision DEFAULT 0 NOT NULL,
    last_error text,
    created_at double precision NOT NULL,
    status text,
    store_id text,
    courier_id text,
    updated_at text
);


--
-- Name: orderlive_job_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.orderlive_job_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: orderlive_job_id_seq; Type: SEQUENCE OWNED BY; Schema: public; Owner: -
--

ALTER SEQUENCE public.orderlive_job_id_seq OWNED BY public.orderlive_job.id;


--
-- Name: orderlive_leadership; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_leadership (
    account text NOT NULL,
    epoch bigint NOT NULL,
    leader text NOT NULL,
    since double precision NOT NULL
);


--
-- Name: orderlive_migration; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_migration (
    version text NOT NULL,
    applied_at double precision NOT NULL
);


--
-- Name: orderlive_order; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_order (
    account text NOT NULL,
    id text NOT NULL,
    status text NOT NULL,
    store_id text,
    courier_id text,
    version bigint,
    updated_at text,
    body text NOT NULL,
    applied_at double precision NOT NULL
);


--
-- Name: orderlive_order_change; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_order_change (
    account text NOT NULL,
    seq bigint NOT NULL,
    order_id text NOT NULL,
    kind text NOT NULL,
    version bigint,
    body text,
    at double precision NOT NULL,
    status text,
    store_id text,
    courier_id text,
    before_status text,
    before_store_id text,
    before_courier_id text
);


--
-- Name: orderlive_owner; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_owner (
    account text NOT NULL,
    user_id text NOT NULL,
    since double precision NOT NULL
);


--
-- Name: orderlive_stream_cursor; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_stream_cursor (
    account text NOT NULL,
    value text NOT NULL,
    updated_at double precision NOT NULL
);


--
-- Name: orderlive_tombstone; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.orderlive_tombstone (
    account text NOT NULL,
    id text NOT NULL,
    version bigint,
    updated_at text,
    deleted_at double precision NOT NULL
);


--
-- Name: orderlive_dead_letter id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_dead_letter ALTER COLUMN id SET DEFAULT nextval('public.orderlive_dead_letter_id_seq'::regclass);


--
-- Name: orderlive_job id; Type: DEFAULT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_job ALTER COLUMN id SET DEFAULT nextval('public.orderlive_job_id_seq'::regclass);


--
-- Data for Name: orderlive_change_log; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_change_log (account, floor) FROM stdin;
acme	921957679759360
\.


--
-- Data for Name: orderlive_dead_letter; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_dead_letter (id, account, kind, order_id, raw, reason, attempts, created_at) FROM stdin;
1	acme	upsert	\N	{not json	the event's data is not JSON	0	1700000000
\.


--
-- Data for Name: orderlive_dedupe_key; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_dedupe_key (account, id, response, accepted_at) FROM stdin;
acme	request:msg_v1	{"counts":1}	1700000000
\.


--
-- Data for Name: orderlive_job; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_job (id, account, kind, order_id, version, payload, source, attempts, not_before, last_error, created_at, status, store_id, courier_id, updated_at) FROM stdin;
1	acme	fetch	4	\N	\N	stream	0	0	\N	1700000000	\N	\N	\N	\N
\.


--
-- Data for Name: orderlive_leadership; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_leadership (account, epoch, leader, since) FROM stdin;
\.


--
-- Data for Name: orderlive_migration; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_migration (version, applied_at) FROM stdin;
1	1700000000
\.


--
-- Data for Name: orderlive_order; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_order (account, id, status, store_id, courier_id, version, updated_at, body, applied_at) FROM stdin;
acme	1	created	\N	\N	1	\N	{"id":1,"status":"created","version":1}	1700000000
acme	2	assigned	\N	\N	3	\N	{"id":2,"status":"assigned","version":3}	1700000000
\.


--
-- Data for Name: orderlive_order_change; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_order_change (account, seq, order_id, kind, version, body, at, status, store_id, courier_id, before_status, before_store_id, before_courier_id) FROM stdin;
acme	921957679759361	1	upserted	1	{"id":1,"status":"created","version":1}	1700000000	created	\N	\N	\N	\N	\N
acme	921957679759362	2	upserted	3	{"id":2,"status":"assigned","version":3}	1700000000	assigned	\N	\N	\N	\N	\N
acme	921957679759363	3	upserted	2	{"id":3,"status":"delivered","version":2}	1700000000	delivered	\N	\N	\N	\N	\N
acme	921957679759364	3	deleted	4	\N	1700000000	\N	\N	\N	delivered	\N	\N
\.


--
-- Data for Name: orderlive_owner; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_owner (account, user_id, since) FROM stdin;
acme	alice	1700000000
\.


--
-- Data for Name: orderlive_stream_cursor; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_stream_cursor (account, value, updated_at) FROM stdin;
acme	evt-41	1700000000
\.


--
-- Data for Name: orderlive_tombstone; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.orderlive_tombstone (account, id, version, updated_at, deleted_at) FROM stdin;
acme	3	4	\N	1700000000
\.


--
-- Name: orderlive_dead_letter_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.orderlive_dead_letter_id_seq', 1, true);


--
-- Name: orderlive_job_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.orderlive_job_id_seq', 1, true);


--
-- Name: orderlive_change_log orderlive_change_log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_change_log
    ADD CONSTRAINT orderlive_change_log_pkey PRIMARY KEY (account);


--
-- Name: orderlive_dead_letter orderlive_dead_letter_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_dead_letter
    ADD CONSTRAINT orderlive_dead_letter_pkey PRIMARY KEY (id);


--
-- Name: orderlive_dedupe_key orderlive_dedupe_key_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_dedupe_key
    ADD CONSTRAINT orderlive_dedupe_key_pkey PRIMARY KEY (account, id);


--
-- Name: orderlive_job orderlive_job_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_job
    ADD CONSTRAINT orderlive_job_pkey PRIMARY KEY (id);


--
-- Name: orderlive_leadership orderlive_leadership_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_leadership
    ADD CONSTRAINT orderlive_leadership_pkey PRIMARY KEY (account);


--
-- Name: orderlive_migration orderlive_migration_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_migration
    ADD CONSTRAINT orderlive_migration_pkey PRIMARY KEY (version);


--
-- Name: orderlive_order_change orderlive_order_change_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_order_change
    ADD CONSTRAINT orderlive_order_change_pkey PRIMARY KEY (account, seq);


--
-- Name: orderlive_order orderlive_order_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_order
    ADD CONSTRAINT orderlive_order_pkey PRIMARY KEY (account, id);


--
-- Name: orderlive_owner orderlive_owner_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_owner
    ADD CONSTRAINT orderlive_owner_pkey PRIMARY KEY (account);


--
-- Name: orderlive_stream_cursor orderlive_stream_cursor_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_stream_cursor
    ADD CONSTRAINT orderlive_stream_cursor_pkey PRIMARY KEY (account);


--
-- Name: orderlive_tombstone orderlive_tombstone_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.orderlive_tombstone
    ADD CONSTRAINT orderlive_tombstone_pkey PRIMARY KEY (account, id);


--
-- Name: orderlive_dead_letter_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orderlive_dead_letter_account ON public.orderlive_dead_letter USING btree (account, id);


--
-- Name: orderlive_dedupe_key_accepted_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orderlive_dedupe_key_accepted_at ON public.orderlive_dedupe_key USING btree (account, accepted_at);


--
-- Name: orderlive_job_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orderlive_job_account ON public.orderlive_job USING btree (account, id);


--
-- Name: orderlive_job_order_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orderlive_job_order_id ON public.orderlive_job USING btree (account, order_id);


--
-- Name: orderlive_order_courier_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orderlive_order_courier_id ON public.orderlive_order USING btree (account, courier_id);


--
-- Name: orderlive_order_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orderlive_order_status ON public.orderlive_order USING btree (account, status);


--
-- Name: orderlive_order_store_id; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX orderlive_order_store_id ON public.orderlive_order USING btree (account, store_id);


--
-- PostgreSQL database dump complete
--


