"""identity api: groups, domain roles, implied roles, regions, the catalog,
credentials, application credentials, project tags and policies

Keystone's v3 resources that cirrus lacked: groups and their members, with
role assignments of their own (``group_role_assignments``); a role on the
system (``role_assignments.system``); domain-specific roles and role
inference rules; a project's parent and tags; a user's extra attributes (Keystone keeps
those it does not know, as ``description``, as JSON); regions; catalog services and
endpoints an operator adds beside the built-in ones; credentials (their blob
encrypted); application credentials (their secret hashed) with their roles;
and policy blobs.

Revision ID: 0036
Revises: 0035
Create Date: 2026-11-26 08:10:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0036'
down_revision = '0035'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('catalog_services',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('type', sa.String(length=255), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_catalog_services'))
    )
    op.create_table('identity_policies',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('type', sa.String(length=255), nullable=False),
    sa.Column('blob', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_identity_policies'))
    )
    op.create_table('regions',
    sa.Column('id', sa.String(length=255), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('parent_region_id', sa.String(length=255), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_regions'))
    )
    op.create_table('catalog_endpoints',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('service_id', sa.String(length=64), nullable=False),
    sa.Column('interface', sa.String(length=8), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('region_id', sa.String(length=255), nullable=True),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_catalog_endpoints'))
    )
    op.create_index(op.f('ix_catalog_endpoints_service_id'), 'catalog_endpoints', ['service_id'], unique=False)
    op.create_table('groups',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('domain_id', sa.String(length=64), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['domain_id'], ['domains.id'], name=op.f('fk_groups_domain_id_domains')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_groups')),
    sa.UniqueConstraint('domain_id', 'name', name=op.f('uq_groups_domain_id_name'))
    )
    op.create_table('implied_roles',
    sa.Column('prior_role_id', sa.String(length=64), nullable=False),
    sa.Column('implied_role_id', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['implied_role_id'], ['roles.id'], name=op.f('fk_implied_roles_implied_role_id_roles'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['prior_role_id'], ['roles.id'], name=op.f('fk_implied_roles_prior_role_id_roles'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('prior_role_id', 'implied_role_id', name=op.f('pk_implied_roles'))
    )
    op.create_table('application_credentials',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('secret_hash', sa.String(length=255), nullable=False),
    sa.Column('expires_at', sa.DateTime(), nullable=True),
    sa.Column('unrestricted', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_application_credentials_project_id_projects'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_application_credentials_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_application_credentials')),
    sa.UniqueConstraint('user_id', 'name', name=op.f('uq_application_credentials_user_id_name'))
    )
    op.create_table('credentials',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=True),
    sa.Column('type', sa.String(length=255), nullable=False),
    sa.Column('encrypted_blob', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_credentials_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_credentials'))
    )
    op.create_index(op.f('ix_credentials_user_id'), 'credentials', ['user_id'], unique=False)
    op.create_table('group_role_assignments',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('group_id', sa.String(length=64), nullable=False),
    sa.Column('role_id', sa.String(length=64), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=True),
    sa.Column('domain_id', sa.String(length=64), nullable=True),
    sa.Column('system', sa.String(length=16), nullable=True),
    sa.ForeignKeyConstraint(['domain_id'], ['domains.id'], name=op.f('fk_group_role_assignments_domain_id_domains'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['group_id'], ['groups.id'], name=op.f('fk_group_role_assignments_group_id_groups'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_group_role_assignments_project_id_projects'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['role_id'], ['roles.id'], name=op.f('fk_group_role_assignments_role_id_roles'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_group_role_assignments'))
    )
    op.create_table('project_tags',
    sa.Column('project_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_project_tags_project_id_projects'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('project_id', 'name', name=op.f('pk_project_tags'))
    )
    op.create_table('user_group_membership',
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('group_id', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['group_id'], ['groups.id'], name=op.f('fk_user_group_membership_group_id_groups'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_user_group_membership_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', 'group_id', name=op.f('pk_user_group_membership'))
    )
    op.create_table('application_credential_roles',
    sa.Column('application_credential_id', sa.String(length=64), nullable=False),
    sa.Column('role_id', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['application_credential_id'], ['application_credentials.id'], name=op.f('fk_application_credential_roles_application_credential_id_application_credentials'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['role_id'], ['roles.id'], name=op.f('fk_application_credential_roles_role_id_roles'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('application_credential_id', 'role_id', name=op.f('pk_application_credential_roles'))
    )
    op.add_column('projects', sa.Column('parent_id', sa.String(length=64), nullable=True))
    op.add_column('users', sa.Column('extra', sa.Text(), nullable=True))
    op.add_column('role_assignments', sa.Column('system', sa.String(length=16), nullable=True))
    op.add_column('roles', sa.Column('domain_id', sa.String(length=64), nullable=True))
    op.add_column('roles', sa.Column('description', sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column('roles', 'description')
    op.drop_column('roles', 'domain_id')
    op.drop_column('role_assignments', 'system')
    op.drop_column('users', 'extra')
    op.drop_column('projects', 'parent_id')
    op.drop_table('application_credential_roles')
    op.drop_table('user_group_membership')
    op.drop_table('project_tags')
    op.drop_table('group_role_assignments')
    op.drop_index(op.f('ix_credentials_user_id'), table_name='credentials')
    op.drop_table('credentials')
    op.drop_table('application_credentials')
    op.drop_table('implied_roles')
    op.drop_table('groups')
    op.drop_index(op.f('ix_catalog_endpoints_service_id'), table_name='catalog_endpoints')
    op.drop_table('catalog_endpoints')
    op.drop_table('regions')
    op.drop_table('identity_policies')
    op.drop_table('catalog_services')
