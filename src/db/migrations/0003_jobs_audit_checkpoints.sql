CREATE TABLE "audit_checkpoints" (
	"organization_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"seq" bigint NOT NULL,
	"checksum" text NOT NULL,
	"signed_at" timestamp with time zone NOT NULL,
	"key_id" text NOT NULL,
	"public_key" text NOT NULL,
	"message" text NOT NULL,
	"signature" text NOT NULL,
	CONSTRAINT "audit_checkpoints_organization_id_id_pk" PRIMARY KEY("organization_id","id")
);
--> statement-breakpoint
CREATE TABLE "job_schedules" (
	"name" text PRIMARY KEY NOT NULL,
	"every_ms" integer NOT NULL,
	"next_run_at" timestamp with time zone NOT NULL,
	"last_run_at" timestamp with time zone,
	"last_run_by" text
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"organization_id" uuid NOT NULL,
	"id" uuid NOT NULL,
	"type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer NOT NULL,
	"run_at" timestamp with time zone NOT NULL,
	"locked_by" text,
	"idempotency_key" text,
	"last_error" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	CONSTRAINT "jobs_organization_id_id_pk" PRIMARY KEY("organization_id","id")
);
--> statement-breakpoint
ALTER TABLE "audit_checkpoints" ADD CONSTRAINT "audit_checkpoints_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "audit_checkpoints_org_key_seq_uq" ON "audit_checkpoints" USING btree ("organization_id","key_id","seq");--> statement-breakpoint
CREATE INDEX "audit_checkpoints_org_seq_idx" ON "audit_checkpoints" USING btree ("organization_id","seq");--> statement-breakpoint
CREATE INDEX "jobs_due_idx" ON "jobs" USING btree ("run_at") WHERE "jobs"."status" in ('pending', 'running');--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_idempotency_uq" ON "jobs" USING btree ("organization_id","type","idempotency_key") WHERE "jobs"."idempotency_key" is not null;