CREATE TABLE "agents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"type" text NOT NULL,
	"platform" text NOT NULL,
	"framework_version" text,
	"model_provider" text,
	"owner_user_id" uuid,
	"team_id" uuid,
	"environment" text NOT NULL,
	"deployment_url" text,
	"status" text DEFAULT 'active' NOT NULL,
	"health_status" text DEFAULT 'unknown' NOT NULL,
	"last_seen_at" timestamp with time zone,
	"paused_at" timestamp with time zone,
	"paused_by" text,
	"pause_reason" text,
	"monthly_budget_usd" double precision,
	"budget_action" text DEFAULT 'alert' NOT NULL,
	"warning_threshold_pct" double precision DEFAULT 80 NOT NULL,
	"spend_month" text DEFAULT to_char(now() at time zone 'utc', 'YYYY-MM') NOT NULL,
	"current_month_cost_usd" double precision DEFAULT 0 NOT NULL,
	"budget_warned_month" text,
	"budget_exceeded_month" text,
	"trace_count" bigint DEFAULT 0 NOT NULL,
	"error_rate_ewma" double precision DEFAULT 0 NOT NULL,
	"tags" text[] DEFAULT '{}' NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by" text
);
--> statement-breakpoint
CREATE TABLE "traces" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"trace_id" text NOT NULL,
	"agent_id" uuid NOT NULL,
	"parent_trace_id" text,
	"timestamp" timestamp with time zone NOT NULL,
	"duration_ms" integer,
	"status" text NOT NULL,
	"input" jsonb,
	"output" jsonb,
	"error_message" text,
	"error_type" text,
	"model_name" text,
	"prompt_tokens" integer,
	"completion_tokens" integer,
	"total_tokens" integer,
	"cost_usd" double precision,
	"cost_estimated" boolean DEFAULT false NOT NULL,
	"environment" text NOT NULL,
	"version" text,
	"tags" text[],
	"metadata" jsonb,
	"user_id" text,
	"session_id" text,
	"span_type" text DEFAULT 'custom' NOT NULL,
	"span_name" text,
	"flagged" boolean DEFAULT false NOT NULL,
	"flag_reason" text,
	"flagged_at" timestamp with time zone,
	"flagged_by" text,
	"search_vector" "tsvector" GENERATED ALWAYS AS (to_tsvector('simple', coalesce(span_name, '') || ' ' || coalesce(error_message, '')) || jsonb_to_tsvector('simple', coalesce(input, '{}'::jsonb), '["string"]') || jsonb_to_tsvector('simple', coalesce(output, '{}'::jsonb), '["string"]')) STORED,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "traces" ADD CONSTRAINT "traces_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- serves: POST /agents 409 on a duplicate agentId; ingest resolves items by external agentId
CREATE UNIQUE INDEX "agents_org_agent_id_uq" ON "agents" USING btree ("organization_id","agent_id");--> statement-breakpoint
-- serves: GET /agents?status=&environment=; POST /agents/kill-switch (active agents of an org/environment)
CREATE INDEX "agents_org_status_env_idx" ON "agents" USING btree ("organization_id","status","environment");--> statement-breakpoint
-- serves: GET /agents?tag= (tags @> array[tag])
CREATE INDEX "agents_tags_gin" ON "agents" USING gin ("tags");--> statement-breakpoint
-- serves: ingest upsert key (organization, traceId) and the FOR UPDATE read of existing rows
CREATE UNIQUE INDEX "traces_org_trace_id_uq" ON "traces" USING btree ("organization_id","trace_id");--> statement-breakpoint
-- serves: GET /traces newest first (its sort order: LIMIT stops early, also under a common ?search= term); startTime/endTime; /traces/stats; export keyset (timestamp, id); similar (recent window)
CREATE INDEX "traces_org_ts_id_idx" ON "traces" USING btree ("organization_id","timestamp" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
-- serves: GET /traces?agentId= (with or without status) newest first; index-only count of agentId+status; agent stats (24h/7d/30d)
CREATE INDEX "traces_org_agent_ts_id_idx" ON "traces" USING btree ("organization_id","agent_id","timestamp" DESC NULLS FIRST,"id" DESC NULLS FIRST,"status");--> statement-breakpoint
-- serves: GET /traces?status= across agents (and its index-only count); agentId+status when the status is the rarer filter
CREATE INDEX "traces_org_status_ts_id_idx" ON "traces" USING btree ("organization_id","status","timestamp" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
-- serves: GET /traces?sessionId=; relatedTraces by session
CREATE INDEX "traces_org_session_idx" ON "traces" USING btree ("organization_id","session_id") WHERE "traces"."session_id" is not null;--> statement-breakpoint
-- serves: GET /traces/{id}/children and /tree (recursive by parent_trace_id); relatedTraces by parent
CREATE INDEX "traces_org_parent_idx" ON "traces" USING btree ("organization_id","parent_trace_id") WHERE "traces"."parent_trace_id" is not null;--> statement-breakpoint
-- serves: GET /traces?search= (search_vector @@ websearch_to_tsquery): the capped match count, and the page of a rare term
CREATE INDEX "traces_search_gin" ON "traces" USING gin ("search_vector");--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;